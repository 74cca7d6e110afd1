"""The Pulsar flow's source readers, one per partition topic, each failing on its own.

A topic the source cannot serve (after a broker crash pulsar-lite may answer every
``getLastMessageId`` of one topic with ``UnknownError`` for good) must not stop the copying of
every other topic: a reader whose read fails is closed and set aside with its own backoff,
then opened again from where the flow's progress says. What it had read before failing is
copied as usual; what it had not read is read again by its successor. A reader whose
connection is gone (its broker was killed and came back) is set aside the same way before it
is asked anything: pulsar-client answers such a reader's calls only after its operation
timeout, and the round reads every topic in turn, so a few such readers held every other
topic's copying up for minutes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Protocol

import pulsar

from hotstandby.logs import get_logger

__all__ = ["SourceReaders"]

log = get_logger("hotstandby.replicator")

_FIRST_BACKOFF_S = 0.2
_MAX_BACKOFF_S = 5.0


class _Reader(Protocol):
    def is_connected(self) -> bool: ...
    def has_message_available(self) -> bool: ...
    def read_next(self, timeout_millis: int | None = None) -> pulsar.Message: ...
    def close(self) -> None: ...


class SourceReaders:
    """Readers by partition topic; ``open_reader(part)`` makes one that starts after the
    flow's progress for ``part``."""

    def __init__(
        self,
        flow: str,
        open_reader: Callable[[str], _Reader],
        *,
        on_failure: Callable[[str, Exception], None] = lambda part, exc: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._flow = flow
        self._open = open_reader
        self._on_failure = on_failure
        self._clock = clock
        self._readers: dict[str, _Reader | None] = {}  # None: set aside, reopened at _retry_at
        self._retry_at: dict[str, float] = {}
        self._backoff: dict[str, float] = {}

    def add(self, part: str) -> None:
        """Start reading ``part`` (a failure to open sets it aside like a failed read)."""
        self._readers[part] = None
        self._retry_at[part] = self._clock()
        self._reopen(part)

    @property
    def stalled(self) -> list[str]:
        """The partition topics set aside after a failure, waiting for their retry."""
        return sorted(part for part, reader in self._readers.items() if reader is None)

    def read_round(self, limit: int, timeout_ms: int) -> list[tuple[str, pulsar.Message]]:
        """Up to ``limit`` messages that are available now, partition after partition."""
        batch: list[tuple[str, pulsar.Message]] = []
        now = self._clock()
        for part in list(self._readers):
            reader = self._readers[part]
            if reader is None:
                if now < self._retry_at[part]:
                    continue
                reader = self._reopen(part)
                if reader is None:
                    continue
            if not reader.is_connected():
                self._set_aside(part, reader, pulsar.PulsarException("Pulsar error: NotConnected"))
                continue
            try:
                while len(batch) < limit and reader.has_message_available():
                    batch.append((part, reader.read_next(timeout_ms)))
            except pulsar.PulsarException as exc:
                self._set_aside(part, reader, exc)
                continue
            self._backoff.pop(part, None)
            if len(batch) >= limit:
                break
        return batch

    def rewind(self) -> None:
        """After a failed copy: every reader anew from the progress (what was not stored is read again)."""
        for part, reader in list(self._readers.items()):
            if reader is not None:
                with contextlib.suppress(pulsar.PulsarException):
                    reader.close()
                self._readers[part] = None
                self._retry_at[part] = self._clock()
            self._reopen(part)

    def close(self) -> None:
        for part, reader in self._readers.items():
            if reader is None:
                continue
            try:
                reader.close()
            except pulsar.PulsarException as exc:
                log.warning("replicator.close_failed", flow=self._flow, topic=part, error=str(exc))
        self._readers.clear()

    def _reopen(self, part: str) -> _Reader | None:
        try:
            reader = self._open(part)
        except pulsar.PulsarException as exc:
            self._set_aside(part, None, exc)
            return None
        self._readers[part] = reader
        return reader

    def _set_aside(self, part: str, reader: _Reader | None, exc: Exception) -> None:
        if reader is not None:
            with contextlib.suppress(pulsar.PulsarException):
                reader.close()
        backoff = min(max(self._backoff.get(part, 0.0) * 2, _FIRST_BACKOFF_S), _MAX_BACKOFF_S)
        self._backoff[part] = backoff
        self._readers[part] = None
        self._retry_at[part] = self._clock() + backoff
        log.warning("replicator.topic_failed", flow=self._flow, topic=part, error=str(exc), retry_in_s=backoff)
        self._on_failure(part, exc)
