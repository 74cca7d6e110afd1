"""The entry point shared by the replicator processes: load a flow config, run until SIGTERM
(in a supervised child process, restarted after a crash: see supervise.py)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from hotstandby.errors import HotStandbyError
from hotstandby.logs import configure
from hotstandby.refcluster.supervise import CHILD_ENV, supervise

__all__ = ["run_flow_process"]


class _Flow(Protocol):
    def run(self, stop: threading.Event) -> None: ...


def run_flow_process(prog: str, load: Callable[[str], Any], build: Callable[[Any], _Flow]) -> int:
    """``prog --config FLOW.json``: exit 2 on a bad config, else replicate until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog=prog, description="Run one replication flow until stopped.")
    parser.add_argument("--config", required=True, help="flow configuration (JSON)")
    args = parser.parse_args()
    configure("info", json=True)
    try:
        config = load(args.config)
    except HotStandbyError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if os.environ.get(CHILD_ENV) != "1":
        return supervise([sys.executable, *sys.orig_argv[1:]])
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    build(config).run(stop)
    return 0
