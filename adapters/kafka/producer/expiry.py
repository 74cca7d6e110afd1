"""The application's ``message.timeout.ms`` for records with a delivery callback, kept by the SDK
where the raw producer runs without one (a quiet producer, :mod:`.quiet`).

A record not acknowledged within the timeout is reported ``_MSG_TIMED_OUT`` to its callback,
as confluent-kafka reports it, and leaves the outbox. The raw producer may still store it
later — as with confluent-kafka, a timed-out record may have been stored — and that report is
not passed on: the callback fires once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from hotstandby.adapters.kafka.producer.state import Record

__all__ = ["Expiry"]


class Expiry:
    """Records with a callback, in the order they were produced, with their deadlines."""

    def __init__(self, timeout_ms: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._timeout_s = timeout_ms / 1000
        self._clock = clock
        self._due: deque[tuple[float, Record]] = deque()

    def watch(self, record: Record) -> None:
        """``record`` was produced now: due after the timeout. Records reported meanwhile are
        let go first (reports come mostly in order), so the queue holds what is unreported."""
        due = self._due
        while due and due[0][1].reported:
            due.popleft()
        due.append((self._clock() + self._timeout_s, record))

    def due(self) -> bool:
        """Whether a record's deadline passed (it may have been acknowledged since)."""
        return bool(self._due) and self._due[0][0] <= self._clock()

    def expired(self) -> list[Record]:
        """The records whose deadline passed and that were not reported yet, taken out."""
        now = self._clock()
        due = self._due
        out = []
        while due and due[0][0] <= now:
            record = due.popleft()[1]
            if not record.reported:
                out.append(record)
        return out
