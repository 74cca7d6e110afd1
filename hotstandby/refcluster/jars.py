"""The jars of the real systems (``refcluster up --brokers apache``), resolved by Maven.

Each set of jars is named by a pom shipped with the package (``refcluster/java/*-pom.xml``).
The first ``up`` runs ``mvn dependency:copy-dependencies`` once per set, which fetches from
Maven Central through Maven's own client; the jars are then kept under
``$HOTSTANDBY_JARS_DIR`` (default ``~/.hotstandby/jars``) in a folder named by the set, its
version and a digest of its pom, and every later start uses them without Maven or a network.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import MissingDependencyError, RefClusterError
from hotstandby.logs import get_logger

__all__ = ["JAVA_DIR", "JarSet", "jars_home"]

log = get_logger("hotstandby.refcluster")

JAVA_DIR = resources.files("hotstandby.refcluster") / "java"
_RESOLVE_TIMEOUT_S = 900.0  # a cold Maven cache fetches about 300 MB
_DONE = ".resolved"


def jars_home() -> Path:
    """``$HOTSTANDBY_JARS_DIR`` or ``~/.hotstandby/jars``."""
    return Path(os.environ.get("HOTSTANDBY_JARS_DIR") or Path.home() / ".hotstandby" / "jars")


@dataclass(frozen=True)
class JarSet:
    """The jars one shipped pom (``java/<name>-pom.xml``) resolves to."""

    name: str

    @property
    def pom(self) -> bytes:
        return (JAVA_DIR / f"{self.name}-pom.xml").read_bytes()

    @property
    def version(self) -> str:
        found = re.search(rb"<artifactId>apache-[\w-]+</artifactId>\s*<version>([^<]+)</version>", self.pom)
        if found is None:
            raise RefClusterError(f"{self.name}-pom.xml names no version")
        return found.group(1).decode()

    def directory(self, home: Path | None = None) -> Path:
        digest = hashlib.sha256(self.pom).hexdigest()[:10]
        return (home or jars_home()) / f"{self.name}-{self.version}-{digest}"

    def cached(self, home: Path | None = None) -> bool:
        return (self.directory(home) / _DONE).is_file()

    def classpath(self, home: Path | None = None) -> str:
        """The ``-cp`` of a JVM of this set (its folder of jars); raises if it is not resolved."""
        folder = self.directory(home)
        if not (folder / _DONE).is_file():
            raise RefClusterError(
                f"the {self.name} jars are not resolved; `hotstandby refcluster up --brokers apache` does it"
            )
        return str(folder / "*")

    def resolve(self, home: Path | None = None, *, progress: Callable[[str], None] | None = None) -> Path:
        """The folder of this set's jars, resolved with Maven the first time (once, also when
        several processes ask at once)."""
        folder = self.directory(home)
        if (folder / _DONE).is_file():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        with _locked(folder.parent / f".{folder.name}.lock"):
            if (folder / _DONE).is_file():  # another process resolved it while we waited
                return folder
            self._fetch(folder, progress)
        return folder

    def _fetch(self, folder: Path, progress: Callable[[str], None] | None) -> None:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise MissingDependencyError(
                "Maven (mvn) is not on PATH; the apache reference cluster resolves its jars with it"
            )
        if progress:
            progress(f"resolving Apache {self.name} {self.version} jars with Maven (first time only)")
        staging = folder.with_name(folder.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "pom.xml").write_bytes(self.pom)
        argv = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(staging / "pom.xml"), "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]  # fmt: skip
        started = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=_RESOLVE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise RefClusterError(
                f"Maven did not resolve the {self.name} jars within {_RESOLVE_TIMEOUT_S:.0f} s"
            ) from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise RefClusterError(f"Maven could not resolve the {self.name} jars ({' '.join(argv)}):\n{tail}")
        (staging / "pom.xml").unlink()
        (staging / _DONE).write_text(f"{self.version}\n")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        log.info("refcluster.jars_resolved", jars=self.name, version=self.version, folder=str(folder),
                 seconds=round(time.monotonic() - started, 1))  # fmt: skip


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock: one process resolves, the others wait for it (not forever)."""
    with open(path, "w") as handle:

        def take() -> bool:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False

        if not wait_until(take, _RESOLVE_TIMEOUT_S + 60, first=0.2, most=2.0):
            raise RefClusterError(f"another process held {path} for longer than Maven may take")
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def java_argv(jars: JarSet, main: str, *args: str, heap: str, flags: tuple[str, ...] = ()) -> list[str]:
    """The command line of a JVM running ``main`` of ``jars``: a small fixed heap and the serial
    collector (two cores are shared by six JVMs), log4j2 to standard output (the process's log)."""
    java = shutil.which("java")
    if java is None:
        raise MissingDependencyError("java is not on PATH; the apache reference cluster runs on Java 17")
    log_config = JAVA_DIR / "log4j2.properties"
    return [
        java, f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log_config}", *flags, "-cp", jars.classpath(), main, *args,
    ]  # fmt: skip
