"""Starting programs while etcd clients run: a JVM (pyspark's gateway) or any child started
through ``fork`` + ``exec`` must reach its ``exec`` (grpc/grpc#43055). With grpc's fork
handlers on, about one child in seventy dies before it and some hang in grpc's handler."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

from hotstandby.configcenter import ConfigCenter
from tests.support import ChangeQueue

_CHILDREN = 300
_DEADLINE_S = 120.0


def _children_not_yet_exec() -> list[int]:
    """Our child processes still running our own command line: forked, never reached exec."""
    ours = Path("/proc/self/cmdline").read_bytes()
    pids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == ours:
                    pids.append(int(pid))
            except OSError:
                continue
    return pids


def test_children_forked_beside_a_watch_and_etcd_reads_all_run_their_program(center: ConfigCenter) -> None:
    stop = threading.Event()
    failed: list[int] = []

    def read() -> None:
        while not stop.is_set():
            center.routes()

    def start_children() -> None:
        for _ in range(_CHILDREN):
            # preexec_fn makes subprocess fork() (not vfork), as pyspark does for its JVM.
            child = subprocess.Popen(["/bin/true"], preexec_fn=lambda: None, close_fds=True)  # noqa: PLW1509
            if (code := child.wait(timeout=30)) != 0:
                failed.append(code)

    reader = threading.Thread(target=read, daemon=True)
    starter = threading.Thread(target=start_children, daemon=True)
    with center.watch_routes(ChangeQueue()):
        reader.start()
        starter.start()
        starter.join(_DEADLINE_S)
        stuck = _children_not_yet_exec() if starter.is_alive() else []
        for pid in stuck:  # lets Popen return, so that nothing is left behind
            os.kill(pid, signal.SIGKILL)
        starter.join(30)
        stop.set()
        reader.join(30)
    assert stuck == [], f"children stuck between fork and exec: {stuck}"
    assert failed == [], f"{len(failed)} of {_CHILDREN} children died before running their program: {failed}"
