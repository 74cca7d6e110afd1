"""The reference cluster a benchmark runs on: its own, on free loopback ports, or one that is up."""

from __future__ import annotations

import argparse
import contextlib
import signal
import tempfile
from collections.abc import Iterator
from types import FrameType

from hotstandby.refcluster import Ports, RefCluster
from hotstandby.refcluster.system import Tuning


def add_cluster_options(parser: argparse.ArgumentParser, *, default: str = "lite") -> None:
    parser.add_argument("--brokers", choices=("apache", "lite"), default=default,
                        help=f"the reference cluster to start (default {default})")  # fmt: skip
    parser.add_argument("--refcluster-dir", help="use the reference cluster up in this directory (left running)")
    parser.add_argument("--settings", choices=("test", "production"), default="test",
                        help="the real systems' settings of the cluster to start (docs/refcluster.md)")  # fmt: skip


@contextlib.contextmanager
def reference_cluster(brokers: str, directory: str | None, tuning: Tuning = "test") -> Iterator[RefCluster]:
    """The cluster up in ``directory``, or a new one of ``brokers`` stopped afterwards."""
    if directory is not None:
        rc = RefCluster(directory)
        if not rc.is_up():
            raise SystemExit(f"no reference cluster is up in {directory}")
        yield rc
        return
    with terminated_as_exit(), tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp, \
            RefCluster(tmp, Ports.free(), brokers=brokers, tuning=tuning) as rc:  # fmt: skip
        yield rc


@contextlib.contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM ends the benchmark as Ctrl-C does: through the cluster's ``down``, not around it."""

    def exit_now(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
