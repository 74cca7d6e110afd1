"""A replicator's supervisor restarts its child after a crash, and stops with it."""

from __future__ import annotations

import sys
from pathlib import Path

from hotstandby.refcluster.supervise import supervise

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
