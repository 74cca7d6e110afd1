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
    """Acknowledged records in acknowledgement order (not thread-safe: the producer's lock).

    Times, sizes and records are kept side by side rather than as a tuple per record: the
    window holds up to a minute of records, and a tuple holding a record the garbage collector
    tracks is walked on every collection of its generation."""

    def __init__(self, max_age_ms: int, max_bytes: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._max_age_s = max_age_ms / 1000
        self._max_bytes = max_bytes
        self._at: deque[float] = deque()  # acknowledged at
        self._sizes: deque[int] = deque()
        self._records: deque[R] = deque()
        self.bytes = 0

    def add(self, record: R, size: int) -> None:
        """``record`` was acknowledged now; older records beyond the bounds leave the window."""
        now = self._clock()
        at = self._at
        at.append(now)
        self._sizes.append(size)
        self._records.append(record)
        self.bytes += size
        if at[0] < now - self._max_age_s or self.bytes > self._max_bytes:
            horizon = now - self._max_age_s
            while at and (at[0] < horizon or self.bytes > self._max_bytes):
                at.popleft()
                self._records.popleft()
                self.bytes -= self._sizes.popleft()

    def keep(self, wanted: Callable[[R], bool]) -> int:
        """Keep only the records ``wanted`` accepts; returns how many left the window."""
        before = len(self._records)
        kept = [e for e in zip(self._at, self._sizes, self._records, strict=True) if wanted(e[2])]
        self._at = deque(e[0] for e in kept)
        self._sizes = deque(e[1] for e in kept)
        self._records = deque(e[2] for e in kept)
        self.bytes = sum(self._sizes)
        return before - len(self._records)

    def __iter__(self) -> Iterator[R]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)
