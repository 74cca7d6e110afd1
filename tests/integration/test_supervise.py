"""A replicator's supervisor restarts its child after a crash, and stops with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from hotstandby.refcluster.processes import stop_pid
from hotstandby.refcluster.supervise import supervise
from tests.support import wait_for

CHILD = """
import os, sys
from pathlib import Path
runs = Path(sys.argv[1])
runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
if len(runs.read_text()) < 3:
    os.abort()  # as librdkafka does on a failed internal assertion
"""


def test_a_crashed_child_is_restarted_until_it_exits_cleanly(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert supervise([sys.executable, "-c", CHILD, str(runs)]) == 0
    assert runs.read_text() == "xxx", "two crashes, two restarts, then a clean exit"


def test_a_configuration_error_is_not_retried(tmp_path: Path) -> None:
    assert supervise([sys.executable, "-c", "raise SystemExit(2)"]) == 2


def test_stopping_a_component_also_ends_what_it_left_in_its_process_group(tmp_path: Path) -> None:
    """A replicator's flow child that ignores SIGTERM outlived its supervisor (seen after a
    benchmark: one still ran an hour later); stopping the component ends its group."""
    ready = tmp_path / "child.pid"
    script = f"bash -c 'trap \"\" TERM; echo $$ > {ready}; exec sleep 300' & wait"
    argv = ["bash", "-c", script]
    leader = subprocess.Popen(argv, start_new_session=True)
    try:
        wait_for(lambda: ready.exists() and ready.read_text().strip(), timeout=10, what="the child started")
        child = int(ready.read_text())
        assert stop_pid(leader.pid, argv, timeout=2.0)
        leader.wait(5)

        def child_gone() -> bool:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return True
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            return state == "Z"

        wait_for(child_gone, timeout=5, what="the child that ignored SIGTERM ended")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
