"""Keeping a replicator running: restart it when it dies of a crash.

A replicator process runs its flow in a child process and restarts the child when it dies
abnormally (a native crash, an abort) — what Kafka Connect does for a failed MirrorMaker 2
task. librdkafka aborts on an internal assertion now and then while a broker is down
(``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``); without a restart
the flow would stop for good and the drill would wait for copies that never come. The child
dies with its supervisor (Linux parent-death signal), and SIGTERM/SIGINT are passed on.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from hotstandby.logs import get_logger

__all__ = ["CHILD_ENV", "supervise"]

log = get_logger("hotstandby.refcluster.supervise")

CHILD_ENV = "HOTSTANDBY_SUPERVISED_CHILD"
_PR_SET_PDEATHSIG = 1
_STOP_TIMEOUT_S = 15.0


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def supervise(argv: list[str], *, config_error: int = 2) -> int:
    """Run ``argv`` (this program again) as a child until it exits cleanly or we are told to
    stop; restart it, with backoff, after an abnormal exit. Returns the exit status to use."""
    supervisor = _Supervisor(argv, config_error)
    previous = {sig: signal.signal(sig, supervisor.on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return supervisor.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Supervisor:
    def __init__(self, argv: list[str], config_error: int) -> None:
        self.argv = argv
        self.config_error = config_error
        self.stop = threading.Event()
        self.child: subprocess.Popen[Any] | None = None

    def on_signal(self, signum: int, _frame: object) -> None:
        self.stop.set()
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        backoff = 0.5
        try:
            while not self.stop.is_set():
                started = time.monotonic()
                # The supervisor runs no other thread, so preexec_fn is safe here.
                env = {**os.environ, CHILD_ENV: "1"}
                self.child = subprocess.Popen(self.argv, env=env, preexec_fn=_die_with_parent)  # noqa: PLW1509
                rc = self._wait()
                if self.stop.is_set() or rc == 0:
                    return 0
                if rc == self.config_error:
                    return self.config_error
                if time.monotonic() - started > 30:
                    backoff = 0.5
                log.error("replicator.crashed", returncode=rc, restart_in_s=backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
            return 0
        finally:
            self._stop_child()

    def _wait(self) -> int:
        assert self.child is not None
        while True:
            try:
                return self.child.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue

    def _stop_child(self) -> None:
        child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(5)
