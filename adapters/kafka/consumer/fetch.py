"""Fetching for a Kafka ``Consumer``: records fetched from the current cluster in batches,
examined one at a time — filtered by the ack ledger, or handed out under their logical topic.

What the SDK keeps for itself is not handed out: the ``hs-id`` header is taken off the messages
(their identity stays on them as :attr:`LogicalMessage.hs_id`; ``headers()`` is None when no
other header is left, as for a record written without headers), and the error events saying a
remote copy (``kafka-b.orders``) does not exist yet are dropped — the application never named it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot, log
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["Fetcher", "LogicalMessage", "logical_message", "message_identity", "record_id"]

# Records fetched from librdkafka per call: one call per record costs more than our filter.
_FETCH_BATCH = 500


class LogicalMessage(Message):
    """A message as the consumer hands it out: under its logical topic name, without the
    ``hs-id`` header, remembering the physical topic it came from and its identity."""

    physical_topic: str
    hs_id: RecordId | None  # the record's identity (None: written by another producer)


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


def _identity_and_rest(
    headers: list[tuple[str, Any]] | dict[str, Any], topic: str, partition: int, offset: int
) -> tuple[RecordId | None, list[tuple[str, Any]]]:
    """A fetched record's identity and the headers the application sees (all but ``hs-id``).
    Once per record: the SDK's producer writes the identity last, which is looked at first."""
    if isinstance(headers, list):
        name, raw = headers[-1]
        if name == HEADER and type(raw) is bytes and len(headers) == 1:
            try:
                return RecordId.decode(raw), []
            except FormatError:
                pass  # record_id says what is wrong
        return record_id(headers, topic, partition, offset), [(k, v) for k, v in headers if k != HEADER]
    return record_id(headers, topic, partition, offset), [(k, v) for k, v in headers.items() if k != HEADER]


def logical_message(
    msg: Message, topic: str, headers: list[tuple[str, Any]] | None, rid: RecordId | None
) -> LogicalMessage:
    """``msg`` as handed out: under ``topic`` with ``headers``, remembering its physical topic
    and identity."""
    epoch = msg.leader_epoch()  # None when unknown, which the constructor takes as -1
    # Positional: a third of the time keywords take, once per record. The order is
    # Message(topic, partition, offset, key, value, headers, error, timestamp, latency,
    # leader_epoch); latency -1 reads back as None, as on a consumed message.
    out = LogicalMessage(topic, msg.partition(), msg.offset(), msg.key(), msg.value(), headers, None,
                         msg.timestamp(), -1, -1 if epoch is None else epoch)  # fmt: skip
    out.physical_topic = msg.topic() or ""
    out.hs_id = rid
    return out


def message_identity(message: Message) -> RecordId | None:
    """The identity of a message the application hands back (ours, or a raw one with headers)."""
    if isinstance(message, LogicalMessage):
        return message.hs_id
    headers = message.headers()
    topic, partition, offset = message.topic() or "", message.partition() or 0, message.offset() or 0
    return record_id(headers, topic, partition, offset) if headers else None


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
                self._after_fetch([] if msg is None else [msg])
                return None if msg is not None and self._revoked_now and self._not_ours([msg]) else msg
            self._after_fetch(batch)
            if self._revoked_now:
                batch = self._not_ours(batch, keep=True)
            self._buffer.extend(batch)
        return self._buffer.popleft() if self._buffer else None

    def _after_fetch(self, fetched: list[Message]) -> None:
        """Partitions lost during the fetch are told now, unless it fetched an error event too:
        then at the next poll, after the application got the error, as with confluent-kafka."""
        if self._s.lost_tells and all(m.error() is None for m in fetched):
            self._s.tell_lost()

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
        error = msg.error()
        if error is not None:
            return None if self._copy_missing(msg, error) or self._copy_reset(msg, error) else msg
        acks = self._s.acks
        physical, partition, offset = msg.topic() or "", msg.partition() or 0, msg.offset() or 0
        logical = self._s.logical_of(physical)
        headers = msg.headers()
        rid, shown = _identity_and_rest(headers, physical, partition, offset) if headers else (None, None)
        slot = (physical, partition)
        if not acks.offer(logical, slot, offset, rid, msg.timestamp()[1]):
            acks.mark_filtered_processed(slot, offset)
            return None
        self._last_returned = (slot, offset)
        return logical_message(msg, logical, shown or None, rid)

    def _copy_missing(self, msg: Message, error: KafkaError) -> bool:
        """An event saying a remote copy the SDK subscribed to does not exist (yet)."""
        if error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            return False
        logical = self._s.logical
        topic = msg.topic()
        if topic:
            copies = [topic] if logical.get(topic, topic) != topic else []
        else:  # the event may name the topic in its text only
            text = error.str()
            copies = [physical for physical, name in list(logical.items()) if physical != name and physical in text]
        if copies:
            self._s.seldom.info("consumer.copy_not_there", topic=topic, error=error.str(), cluster=self._s.spec.name)
            self._s.late_copies.missing(copies)
        return bool(copies)

    def _copy_reset(self, msg: Message, error: KafkaError) -> bool:
        """``auto.offset.reset=error`` and a remote copy without a committed offset: the
        application named the topic, not its copy, and cannot place it; the copy is read from
        its beginning (the ack ledger filters what was acknowledged) instead of stopping."""
        topic = msg.topic() or ""
        if error.code() != KafkaError._AUTO_OFFSET_RESET or self._s.logical_of(topic) == topic:
            return False
        self._s.seldom.info("consumer.copy_from_beginning", topic=topic, partition=msg.partition(),
                            cluster=self._s.spec.name)  # fmt: skip
        try:
            self._s.inner.seek(TopicPartition(topic, msg.partition() or 0, OFFSET_BEGINNING))
        except KafkaException as exc:  # revoked meanwhile: its next owner places it
            log.info("consumer.copy_reset_failed", topic=topic, error=str(exc))
        return True

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

    def discard(self, slots: set[Slot], start: int) -> None:
        """A seek of ``slots`` to ``start``: what was fetched there and not handed out is dropped
        (librdkafka fetches from the new position)."""
        self._buffer = deque(
            m for m in self._buffer if m.error() is not None or (m.topic(), m.partition()) not in slots
        )
        returned = self._last_returned
        if returned is not None and returned[0] in slots and returned[1] >= start:
            self._last_returned = None  # sought back over: not processed

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
