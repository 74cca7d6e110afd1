"""Spark's own servers on loopback, started from pyspark's launcher scripts: a standalone
cluster (a master and a worker, ``bin/spark-class``) and a Spark Connect server
(``bin/spark-submit``). The tests, the drill and docs/spark.md use them to run the source the
way a Spark cluster runs it — executors in JVMs of their own, with their own Python workers —
and from a Spark Connect client.

Each server is a child process in a session of its own, with its log in the directory given;
:meth:`stop` ends it by its PID, and what it started (a worker's executors and their Python
workers) with its process group. Ports are free ones on 127.0.0.1, chosen at start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import ProcessStartError
from hotstandby.logs import get_logger
from hotstandby.refcluster.processes import spawn, tail

__all__ = ["SparkConnectServer", "SparkStandalone", "spark_home"]

log = get_logger("hotstandby.spark")

HOST = "127.0.0.1"
_STOP_WAIT_S = 15.0


def spark_home() -> Path:
    """The Spark distribution pip installed with pyspark (its ``bin`` has the launchers)."""
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _environment(**extra: str) -> dict[str, str]:
    """Loopback only, this Python for the Python workers, small daemons (the machine is shared)."""
    env = dict(os.environ)
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME="localhost",
               PYSPARK_PYTHON=sys.executable, SPARK_DAEMON_MEMORY="512m", SPARK_NO_DAEMONIZE="1")  # fmt: skip
    env.update(extra)
    return env


class _Server:
    """One child process, stopped by its PID and its process group."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.dir = Path(directory)
        self.log_path = self.dir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = spawn(argv, log_path=self.log_path, cwd=self.dir, env=env)
        log.info("spark.server_started", server=self.name, pid=self.proc.pid, log=str(self.log_path))
        return self.proc

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        proc = self.proc
        assert proc is not None

        def check() -> bool:
            if proc.poll() is not None:
                raise ProcessStartError(f"{self.name} exited with code {proc.returncode}; log {self.log_path}:\n"
                                        f"{tail(self.log_path)}")  # fmt: skip
            return ready()

        if not wait_until(check, timeout, first=0.2, most=0.5):
            self.stop()
            raise ProcessStartError(f"{self.name}: {what} within {timeout:.0f} s; log {self.log_path}:\n"
                                    f"{tail(self.log_path)}")  # fmt: skip

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a while; then whatever is left in its process group."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                log.warning("spark.server_killed", server=self.name, pid=proc.pid, after_s=_STOP_WAIT_S)
                proc.kill()
                proc.wait(5)
        # Started in a session of its own, so its group is its own: a worker's executors and
        # their Python workers are in it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        log.info("spark.server_stopped", server=self.name, pid=proc.pid)


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.load(response)


class SparkStandalone:
    """A standalone Spark cluster: one master, one worker with ``cores`` cores and ``memory``
    for its executors. :meth:`start` returns once the worker is registered with the master."""

    def __init__(self, directory: str | Path, *, cores: int = 2, memory: str = "2g") -> None:
        self.dir = Path(directory)
        self.cores, self.memory = cores, memory
        self.port = self.ui_port = 0
        self._master = _Server("spark-master", self.dir)
        self._worker = _Server("spark-worker", self.dir)

    @property
    def url(self) -> str:
        """The master URL to give ``SparkSession.builder.master``."""
        return f"spark://{HOST}:{self.port}"

    def start(self, timeout: float = 120.0) -> SparkStandalone:
        launcher = str(spark_home() / "bin" / "spark-class")
        self.port, self.ui_port = _free_port(), _free_port()
        self._master._start([launcher, "org.apache.spark.deploy.master.Master", "--host", HOST,
                             "--port", str(self.port), "--webui-port", str(self.ui_port)], _environment())  # fmt: skip
        try:
            self._worker._start([launcher, "org.apache.spark.deploy.worker.Worker", self.url, "--host", HOST,
                                 "--webui-port", str(_free_port()), "--cores", str(self.cores), "--memory",
                                 self.memory, "--work-dir", str(self.dir / "work")], _environment())  # fmt: skip
            self._master._wait(self._worker_alive, timeout, "no worker registered with the master")
        except BaseException:
            self.stop()
            raise
        log.info("spark.standalone_up", master=self.url, cores=self.cores)
        return self

    def _worker_alive(self) -> bool:
        if self._worker.proc is not None and self._worker.proc.poll() is not None:
            raise ProcessStartError(f"spark-worker exited; log {self._worker.log_path}:\n{tail(self._worker.log_path)}")
        try:
            status = _get_json(f"http://{HOST}:{self.ui_port}/json/")
        except (OSError, urllib.error.URLError, ValueError):
            return False
        return isinstance(status, dict) and int(status.get("aliveworkers", 0)) >= 1

    def applications(self) -> list[dict[str, object]]:
        """The applications the master runs or ran (its status page's ``activeapps`` and
        ``completedapps``)."""
        status = _get_json(f"http://{HOST}:{self.ui_port}/json/")
        if not isinstance(status, dict):
            return []
        return [*status.get("activeapps", []), *status.get("completedapps", [])]

    def stop(self) -> None:
        self._worker.stop()
        self._master.stop()


class SparkConnectServer:
    """A Spark Connect server (pyspark ships its jar) running its session on ``master``
    (``local[2]`` unless told). :meth:`start` returns once it accepts connections."""

    def __init__(self, directory: str | Path, *, master: str = "local[2]", conf: dict[str, str] | None = None) -> None:
        self.dir = Path(directory)
        self.master = master
        self.conf = dict(conf or {})
        self.port = 0
        self._server = _Server("spark-connect", self.dir)

    @property
    def url(self) -> str:
        """The address to give ``SparkSession.builder.remote``."""
        return f"sc://{HOST}:{self.port}"

    def start(self, timeout: float = 180.0) -> SparkConnectServer:
        self.port = _free_port()
        conf = {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "false",
            "spark.pyspark.python": sys.executable,
            **self.conf,
        }
        argv = [str(spark_home() / "bin" / "spark-submit"), "--class",
                "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "Spark Connect server",
                "--master", self.master]  # fmt: skip
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        self._server._start(argv, _environment())
        self._server._wait(self._accepts, timeout, "no connection accepted")
        log.info("spark.connect_up", url=self.url)
        return self

    def _accepts(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            return s.connect_ex((HOST, self.port)) == 0

    def stop(self) -> None:
        self._server.stop()
