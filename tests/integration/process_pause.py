"""Stopping a reference cluster process without ending it (SIGSTOP): its sockets stay open and
the kernel still accepts connections on its ports, but nothing answers. To its peers that is a
hang: a broker that accepts and never answers, a replicator that stands still."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.processes import is_running


class Paused:
    """``component`` of ``rc``, stopped by :meth:`pause` until :meth:`resume` (idempotent)."""

    def __init__(self, rc: RefCluster, component: str) -> None:
        info = (rc.state() or {})["components"][component]
        if not is_running(info["pid"], info["argv"]):
            raise AssertionError(f"{component} is not running")
        self.group = int(info["pid"])  # started in a session of its own: its process group
        self.paused = False

    def pause(self) -> None:
        os.killpg(self.group, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.paused:
            os.killpg(self.group, signal.SIGCONT)
            self.paused = False


@contextlib.contextmanager
def resumed_after(rc: RefCluster, component: str) -> Iterator[Paused]:
    """A :class:`Paused` for ``component`` that is resumed when the block ends, however it ends."""
    paused = Paused(rc, component)
    try:
        yield paused
    finally:
        paused.resume()
