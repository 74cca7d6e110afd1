"""Stopping a reference cluster process without ending it (SIGSTOP): its sockets stay open and
the kernel still accepts connections on its ports, but nothing answers. To its peers that is a
hang: a broker that accepts and never answers, a replicator that stands still."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.processes import is_running
from tests.support import wait_for


class Paused:
    """``component`` of ``rc``, stopped by :meth:`pause` until :meth:`resume` (idempotent)."""

    def __init__(self, rc: RefCluster, component: str) -> None:
        info = (rc.state() or {})["components"][component]
        if not is_running(info["pid"], info["argv"]):
            raise AssertionError(f"{component} is not running")
        self.group = int(info["pid"])  # started in a session of its own: its process group
        self.paused = False

    def pause(self) -> None:
        """Stop the process and return once every thread of it is stopped: ``kill`` returns
        before that, and on a loaded machine a thread still running may answer a request
        sent right after (as a transaction's commit once was)."""
        os.killpg(self.group, signal.SIGSTOP)
        self.paused = True
        wait_for(self._stopped, 10, f"every thread of process {self.group} to stop")

    def _stopped(self) -> bool:
        states = []
        for task in Path(f"/proc/{self.group}/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                # The state follows the command name in parentheses, which may hold spaces.
                states.append(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0])
        return bool(states) and all(state in ("T", "t") for state in states)

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
