"""Periodic tasks of a flow's loop (topic refresh, offset syncs, heartbeats, checkpoints)."""

from __future__ import annotations

import time

__all__ = ["Every"]


class Every:
    """Is a task that runs every ``seconds`` due? (The first call says yes.)"""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.seconds:
            self._last = now
            return True
        return False
