"""The producer's replay window: records the cluster acknowledged a short while ago.

A broker's acknowledgement does not prove that replication copied the record before the
cluster failed; on a switch the producer sends these records to the new cluster again (same
identity, so consumers filter whichever copy comes second). The window is bounded by age
(``hotstandby.replay.window.ms``) and size (``hotstandby.replay.window.bytes``), oldest first.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["ReplayWindow"]

R = TypeVar("R")


class ReplayWindow(Generic[R]):
    """Acknowledged records in acknowledgement order (not thread-safe: the producer's lock)."""

    def __init__(self, max_age_ms: int, max_bytes: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._max_age_s = max_age_ms / 1000
        self._max_bytes = max_bytes
        self._entries: deque[tuple[float, int, R]] = deque()  # (acknowledged at, size, record)
        self.bytes = 0

    def add(self, record: R, size: int) -> None:
        """``record`` was acknowledged now; older records beyond the bounds leave the window."""
        now = self._clock()
        entries = self._entries
        entries.append((now, size, record))
        self.bytes += size
        if entries[0][0] < now - self._max_age_s or self.bytes > self._max_bytes:
            horizon = now - self._max_age_s
            while entries and (entries[0][0] < horizon or self.bytes > self._max_bytes):
                self.bytes -= entries.popleft()[1]

    def keep(self, wanted: Callable[[R], bool]) -> int:
        """Keep only the records ``wanted`` accepts; returns how many left the window."""
        before = len(self._entries)
        self._entries = deque(e for e in self._entries if wanted(e[2]))
        self.bytes = sum(e[1] for e in self._entries)
        return before - len(self._entries)

    def __iter__(self) -> Iterator[R]:
        return (e[2] for e in self._entries)

    def __len__(self) -> int:
        return len(self._entries)
