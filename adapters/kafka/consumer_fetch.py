"""Fetching for a Kafka ``Consumer``: records fetched from the current cluster in batches,
examined one at a time — filtered by the ack ledger, or handed out under their logical topic.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from confluent_kafka import Message, TopicPartition

from hotstandby.adapters.kafka.consumer_state import ConsumerState, Slot, log
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["Fetcher", "LogicalMessage", "record_id"]

# Records fetched from librdkafka per call: one call per record costs more than our filter.
_FETCH_BATCH = 500


class LogicalMessage(Message):
    """A message under its logical topic name, remembering the physical topic it came from."""

    physical_topic: str


def record_id(
    headers: list[tuple[str, Any]] | dict[str, Any], topic: str, partition: int, offset: int
) -> RecordId | None:
    """The record's ``hs-id``; None when it has none (not written by our producer) or a bad one."""
    raw = dict(headers).get(HEADER)
    if raw is None:
        return None
    try:
        return RecordId.decode(raw if isinstance(raw, bytes) else raw.encode())
    except FormatError as exc:
        log.warning("record.bad_identity", topic=topic, partition=partition, offset=offset, error=str(exc))
        return None


class Fetcher:
    """The buffer of fetched records and what ``poll`` returned last (see the module doc)."""

    def __init__(self, state: ConsumerState, *, auto_store: bool) -> None:
        self._s = state
        self._auto_store = auto_store
        # Fetched from the current cluster, not yet examined (see next).
        self._buffer: deque[Message] = deque()
        self._revoked_now: set[Slot] = set()  # revoked during the last fetch call (see next)
        self._last_returned: tuple[Slot, int] | None = None  # (slot, offset) returned by poll

    def buffered(self) -> Message | None:
        """The next record of the buffer to hand out (fetching nothing), or None."""
        while self._buffer:
            out = self.accept(self._buffer.popleft())
            if out is not None:
                return out
        return None

    def next(self, wait: float) -> Message | None:
        """The next fetched record: from the buffer, else a batch of what librdkafka holds, else
        one record waited for up to ``wait``."""
        if not self._buffer:
            self._revoked_now.clear()
            inner = self._s.inner
            batch = inner.consume(_FETCH_BATCH, 0)
            if not batch:
                msg = inner.poll(wait)
                return None if msg is not None and self._revoked_now and self._not_ours([msg]) else msg
            if self._revoked_now:
                batch = self._not_ours(batch, keep=True)
            self._buffer.extend(batch)
        return self._buffer.popleft() if self._buffer else None

    def _not_ours(self, batch: list[Message], *, keep: bool = False) -> list[Message]:
        """Records of partitions revoked during the call that fetched them and not assigned to
        us again: librdkafka fetched them before the revocation; the new owner reads them from
        the committed offset. With ``keep``, the other records instead. (A partition assigned
        again keeps its records: they follow what we examined, as the buffer was empty, and
        reading restarts at the committed offset; AckTracker sets the earlier reads aside.)"""
        assigned = {(tp.topic, tp.partition) for tp in self._s.inner.assignment()}
        gone = self._revoked_now - assigned
        return [m for m in batch if (m.error() is None and (m.topic(), m.partition()) in gone) != keep]

    def accept(self, msg: Message) -> Message | None:
        """Filter a record already acknowledged; otherwise hand it out under its logical topic."""
        if msg.error() is not None:
            return msg
        acks = self._s.acks
        physical, partition, offset = msg.topic() or "", msg.partition() or 0, msg.offset() or 0
        logical = self._s.logical_of(physical)
        headers = msg.headers()
        rid = record_id(headers, physical, partition, offset) if headers else None
        slot = (physical, partition)
        if not acks.offer(logical, slot, offset, rid, msg.timestamp()[1]):
            acks.mark_filtered_processed(slot, offset)
            return None
        self._last_returned = (slot, offset)
        if physical == logical:
            return msg
        out = LogicalMessage(
            topic=logical, partition=partition, offset=offset, key=msg.key(), value=msg.value(),
            headers=headers, timestamp=msg.timestamp(),
        )  # fmt: skip
        out.physical_topic = physical
        return out

    def mark_returned_processed(self) -> None:
        """With ``enable.auto.offset.store``, what ``poll`` returned last is processed now."""
        if self._auto_store and self._last_returned is not None:
            slot, offset = self._last_returned
            self._s.acks.mark_processed(slot, offset + 1)
        self._last_returned = None

    def drop(self, gone: set[Slot]) -> None:
        """The partitions were revoked: what was fetched there and never handed out is read
        again by their next owner from the committed offset (and by us, if assigned again)."""
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) not in gone)
        self._revoked_now |= gone

    def clear(self) -> None:
        """A switch: what was fetched from the old cluster is never handed out."""
        self._buffer.clear()

    def positions(self, assignment: list[TopicPartition]) -> dict[Slot, int]:
        """The next offset the application gets per partition: librdkafka's position, or the first
        record still in our buffer."""
        out = {(tp.topic, tp.partition): tp.offset for tp in self._s.inner.position(assignment)}
        for msg in reversed(self._buffer):
            if msg.error() is None:
                out[(msg.topic() or "", msg.partition() or 0)] = msg.offset() or 0
        return out
