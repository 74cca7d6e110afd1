"""Sending a Kafka ``Producer``'s records to the raw producer in use, and their delivery
reports: the outbox learns where each record was stored (which trims the replay window at a
switch), and ``on_delivery`` fires once per record whatever the switches in between."""

from __future__ import annotations

import time
from functools import partial

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.state import ProducerState, Record
from hotstandby.adapters.kafka.surface import DeliveryCallback
from hotstandby.failover.outbox import Stored
from hotstandby.logs import Seldom, get_logger

__all__ = ["DEFAULT_MESSAGE_TIMEOUT_MS", "Sender"]

log = get_logger("hotstandby.kafka.producer")
seldom = Seldom(log)

DEFAULT_MESSAGE_TIMEOUT_MS = 300_000  # librdkafka's message.timeout.ms default
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


class Sender:
    """Hands records to the raw producer in use and takes their delivery reports."""

    def __init__(self, state: ProducerState, *, only_errors: bool) -> None:
        self._s = state
        self._only_errors = only_errors  # delivery.report.only.error: successes are not reported

    def send(self, record: Record, *, wait_s: float) -> None:
        """Hand a record to the current client; waits up to ``wait_s`` for room in its queue."""
        s = self._s
        generation = s.generation
        deadline = time.monotonic() + wait_s
        while True:
            try:
                s.inner.produce(
                    record.topic,
                    value=record.value,
                    key=record.key,
                    partition=record.partition,
                    timestamp=record.timestamp,
                    headers=record.headers,
                    on_delivery=partial(self._delivered, record, generation),
                )
                return
            except BufferError:
                if time.monotonic() >= deadline:
                    raise
                s.inner.poll(0.05)

    def replay(self, new: RawProducer, records: list[Record]) -> None:
        """Re-send ``records`` in order (lock held: new records wait behind them), keeping the
        replay window's records in ``new``'s queue within the SDK's share of it, so that the
        application's records find the room they would find with confluent-kafka."""
        s = self._s
        timeout_s = s.message_timeout_ms / 1000
        deadline = time.monotonic() + (timeout_s if timeout_s > 0 else DEFAULT_MESSAGE_TIMEOUT_MS / 1000)
        for record in records:
            # In the queue: the application's pending records, and at most a share of the window's.
            while len(new) >= s.max_pending + s.outbox.own_pending:
                if time.monotonic() >= deadline:
                    raise BufferError(f"re-send: no room in the queue within {timeout_s:.0f} s")
                new.poll(0.05)
            self.send(record, wait_s=max(0.0, deadline - time.monotonic()))

    def _delivered(self, record: Record, generation: int, err: KafkaError | None, msg: Message) -> None:
        with self._s.interrupts.watching():  # a Ctrl-C here must reach flush()'s caller
            self._deliver(record, generation, err, msg)

    def _deliver(self, record: Record, generation: int, err: KafkaError | None, msg: Message) -> None:
        s = self._s
        report: DeliveryCallback | None = None
        with s.lock:
            if generation != s.generation:
                return  # from a connection given up in a switch: the record was sent again
            purged = err is not None and err.code() in _PURGED and not s.user_purge
            if purged and (record.txn is None or not record.txn.aborting):
                return  # purged by the SDK (a replay's transaction aborted): sent again, not reported
            if err is None:
                # A report without an offset proves nothing about replication: never trimmed.
                offset = msg.offset()
                stored = (
                    Stored(s.spec.name, record.topic, record.partition, offset, int(time.time() * 1000))
                    if offset is not None and offset >= 0
                    else None
                )
                s.outbox.acknowledged(record.slot, record.size, stored)
            elif s.outbox.refused(record.slot, record.size):
                seldom.warning(
                    "producer.replay_refused",
                    topic=record.topic,
                    partition=record.partition,
                    error=err.str(),
                    note="kept in the replay window for the next switch",
                )
            if not record.reported:
                record.reported = True
                report = record.on_delivery
        if report is not None and (err is not None or not self._only_errors):
            report(err, msg)
