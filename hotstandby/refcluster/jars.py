"""The jars of the real systems (``refcluster up --brokers apache``), resolved by Maven.

Each set of jars is named by a pom shipped with the package (``refcluster/java/*-pom.xml``).
The first ``up`` runs ``mvn dependency:copy-dependencies`` once per set, which fetches from
Maven Central through Maven's own client; the jars are then kept under
``$HOTSTANDBY_JARS_DIR`` (default ``~/.hotstandby/jars``) in a folder named by the set, its
version and a digest of its pom, and every later start uses them without Maven or a network.

A Java source shipped beside the poms (``refcluster/java/*.java``) is compiled with ``javac``
against its set of jars on first use and kept the same way (:class:`JavaClasses`).
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

__all__ = ["JAVA_DIR", "JarSet", "JavaClasses", "jars_home"]

log = get_logger("hotstandby.refcluster")

JAVA_DIR = resources.files("hotstandby.refcluster") / "java"
_RESOLVE_TIMEOUT_S = 900.0  # a cold Maven cache fetches about 300 MB
_COMPILE_TIMEOUT_S = 300.0  # javac takes seconds; a busy machine more
_DONE = ".resolved"


def jars_home() -> Path:
    """``$HOTSTANDBY_JARS_DIR`` or ``~/.hotstandby/jars``."""
    return Path(os.environ.get("HOTSTANDBY_JARS_DIR") or Path.home() / ".hotstandby" / "jars")


@dataclass(frozen=True)
class JarSet:
    """The jars one shipped pom (``java/<name>-pom.xml``) resolves to."""

    name: str
    requested: str = ""  # a version other than the shipped pom's (its ``<name.version>`` property)

    @property
    def pom(self) -> bytes:
        pom = (JAVA_DIR / f"{self.name}-pom.xml").read_bytes()
        if not self.requested:
            return pom
        version = self.requested.encode()
        pom, count = re.subn(rb"(<%s\.version>)[^<]+(</)" % self.name.encode(), rb"\g<1>" + version + rb"\2", pom)
        if count != 1:
            raise RefClusterError(f"{self.name}-pom.xml has no <{self.name}.version> property to set")
        return re.sub(rb"(<artifactId>apache-[\w-]+</artifactId>\s*<version>)[^<]+", rb"\g<1>" + version, pom, count=1)

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
        mvn = _tool("mvn", "Maven (mvn) is not on PATH; the apache reference cluster resolves its jars with it")
        if progress:
            progress(f"resolving Apache {self.name} {self.version} jars with Maven (first time only)")
        staging = _staging(folder)
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


@dataclass(frozen=True)
class JavaClasses:
    """The classes compiled from one Java source shipped with the package (``java/<source>``)
    against a set of jars; kept beside the jars in a folder named by the set's folder and a
    digest of the source, so a changed source is compiled anew."""

    jars: JarSet
    source: str

    @property
    def text(self) -> bytes:
        return (JAVA_DIR / self.source).read_bytes()

    def directory(self, home: Path | None = None) -> Path:
        jars = self.jars.directory(home)
        digest = hashlib.sha256(self.text).hexdigest()[:10]
        return jars.with_name(f"{jars.name}-{Path(self.source).stem}-{digest}")

    def classpath(self, home: Path | None = None) -> str:
        """The folder to add to a JVM's ``-cp``; raises if it is not compiled."""
        folder = self.directory(home)
        if not (folder / _DONE).is_file():
            raise RefClusterError(f"{self.source} is not compiled; `hotstandby refcluster up --brokers apache` does it")
        return str(folder)

    def resolve(self, home: Path | None = None, *, progress: Callable[[str], None] | None = None) -> Path:
        """The folder of the compiled classes, compiled with ``javac`` the first time (once, also
        when several processes ask at once); the jars must be resolved before."""
        folder = self.directory(home)
        if (folder / _DONE).is_file():
            return folder
        with _locked(folder.parent / f".{folder.name}.lock"):
            if not (folder / _DONE).is_file():
                self._compile(folder, home, progress)
        return folder

    def _compile(self, folder: Path, home: Path | None, progress: Callable[[str], None] | None) -> None:
        javac = _tool("javac", "javac is not on PATH; the apache reference cluster compiles a class of its own "
                               "(a Java 17 JDK has it)")  # fmt: skip
        if progress:
            progress(f"compiling {self.source} against the Apache {self.jars.name} jars (first time only)")
        staging = _staging(folder)
        source = staging / self.source
        source.write_bytes(self.text)
        argv = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-d", str(staging),
                "-cp", self.jars.classpath(home), str(source)]  # fmt: skip
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise RefClusterError(f"javac did not compile {self.source} within {_COMPILE_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise RefClusterError(f"javac could not compile {self.source}:\n{tail}")
        source.unlink()
        (staging / _DONE).write_text(f"{self.source}\n")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        log.info("refcluster.classes_compiled", source=self.source, folder=str(folder))


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


def java_argv(
    jars: JarSet, main: str, *args: str, heap: str, flags: tuple[str, ...] = (), classes: JavaClasses | None = None
) -> list[str]:
    """The command line of a JVM running ``main`` of ``jars`` (and of ``classes``, compiled against
    them): a small fixed heap and the serial collector (two cores are shared by six JVMs), log4j2
    to standard output (the process's log)."""
    java = shutil.which("java")
    if java is None:
        raise MissingDependencyError("java is not on PATH; the apache reference cluster runs on Java 17")
    log_config = JAVA_DIR / "log4j2.properties"
    classpath = jars.classpath() if classes is None else f"{jars.classpath()}{os.pathsep}{classes.classpath()}"
    return [
        java, f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log_config}", *flags, "-cp", classpath, main, *args,
    ]  # fmt: skip


def _tool(name: str, missing: str) -> str:
    """The path of program ``name``; MissingDependencyError(``missing``) when it is not on PATH."""
    found = shutil.which(name)
    if found is None:
        raise MissingDependencyError(missing)
    return found


def _staging(folder: Path) -> Path:
    """An empty folder beside ``folder`` to build it in (renamed to it once complete)."""
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging
