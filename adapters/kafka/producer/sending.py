"""Sending a Kafka ``Producer``'s records to the raw producer in use, and their delivery
reports: the outbox learns where each record was stored (which trims the replay window at a
switch), and ``on_delivery`` fires once per record whatever the switches in between."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.quiet import is_fatal
from hotstandby.adapters.kafka.producer.state import ProducerState, Record
from hotstandby.adapters.kafka.surface import DeliveryCallback
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.outbox import Stored
from hotstandby.logs import Seldom, get_logger

__all__ = ["DEFAULT_MESSAGE_TIMEOUT_MS", "Sender"]

log = get_logger("hotstandby.kafka.producer")
seldom = Seldom(log)

DEFAULT_MESSAGE_TIMEOUT_MS = 300_000  # librdkafka's message.timeout.ms default
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)
_RECONNECT_EVERY_S = 1.0  # at most one new connection after a fatal error per this time
_QUIET_TRIES = 3  # connections that fail in a row before the producer reports every record


class Sender:
    """Hands records to the raw producer in use and takes their delivery reports."""

    def __init__(
        self, state: ProducerState, *, only_errors: bool, connect: Callable[[ClusterSpec], RawProducer]
    ) -> None:
        self._s = state
        self._only_errors = only_errors  # delivery.report.only.error: successes are not reported
        self._connect = connect
        self._reconnected_at = -_RECONNECT_EVERY_S
        self._failed_in_a_row = 0  # connections replaced since a record was last stored

    def send(self, record: Record, *, wait_s: float) -> None:
        """Hand a record to the current client; waits up to ``wait_s`` for room in its queue."""
        s = self._s
        generation = s.generation
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self._hand_over(record, partial(self._delivered, record, generation))
                return
            except BufferError:
                if time.monotonic() >= deadline:
                    raise
                s.inner.poll(0.05)

    def send_quiet(self, record: Record) -> None:
        """Hand a record without a callback to the current client: only a marker carries a
        report, which acknowledges the records of its partition up to it (:mod:`.quiet`)."""
        s = self._s
        quiet = s.quiet
        assert quiet is not None
        marker = quiet.marker((record.topic, record.partition))
        self._hand_over(record, partial(self._marked, record, s.generation) if marker else None)
        quiet.add(record, marker)

    def _hand_over(self, record: Record, on_delivery: Callable[[KafkaError | None, Message], None] | None) -> None:
        self._s.inner.produce(
            record.topic,
            value=record.value,
            key=record.key,
            partition=record.partition,
            timestamp=record.timestamp,
            headers=list(record.headers),
            on_delivery=on_delivery,
        )

    def served(self, call: Callable[[float], int], wait: float) -> int:
        """``call(wait)`` — the raw producer's ``poll`` or ``flush`` — through the interrupt
        guard. A fatal error of a quiet producer's connection is not the application's to
        handle: :meth:`settle` replaces the connection."""
        try:
            return int(self._s.interrupts.serve(call, wait))
        except KafkaException as exc:
            if self._s.quiet is None or not is_fatal(exc):
                raise
            self._s.quiet_failed = True  # (the connection noted it too)
            return 0

    def settle(self) -> None:
        """What a quiet producer settles when its application calls in (poll, flush, len):
        records with a callback past the message timeout are reported timed out
        (:mod:`.expiry`); and when the raw producer holds nothing (every report served) and no
        marker failed, the records sent without a report were all stored: they enter the
        window, without a place."""
        s = self._s
        if s.expiry is not None and s.expiry.due():
            self._expire()
        quiet = s.quiet
        if quiet is None:
            return
        if s.quiet_failed or getattr(s.inner, "fatal", None):
            self.reconnect()
            return
        if not quiet.waiting or len(s.inner):
            return
        with s.lock:
            if quiet.waiting and not s.quiet_failed and not len(s.inner):
                acknowledged = s.outbox.acknowledged
                for record in quiet.rest():
                    acknowledged(record.slot, record.size, None)

    def reconnect(self, *, at_once: bool = False) -> None:
        """The connection in use failed for good (a fatal error, a marker refused): which of
        its records were stored is not known. A new raw producer to the same cluster takes
        over, and every pending record is sent again on it, each with a report (a record the
        old one stored arrives twice, under one identity, and consumers filter the twin).
        ``at_once``: for a record being produced (else at most once a second)."""
        s = self._s
        with s.lock:
            if not (s.quiet_failed or getattr(s.inner, "fatal", None)) or s.closed:
                return
            if not at_once and time.monotonic() < self._reconnected_at + _RECONNECT_EVERY_S:
                return  # polling a cluster that fails every connection does not hammer it
            self._reconnected_at = time.monotonic()
            self._failed_in_a_row += 1
            if self._failed_in_a_row >= _QUIET_TRIES:
                # Every new connection failed before storing anything (a broker or an ACL that
                # refuses idempotent producers): every record takes its own report from now on.
                log.warning("producer.quiet_off", cluster=s.spec.name, connections_failed=self._failed_in_a_row,
                            reason=getattr(s.inner, "fatal", None) or "a report failed")  # fmt: skip
                s.quiet = s.expiry = None
            new = self._connect(s.spec)
            s.generation += 1
            old, s.inner = s.inner, new
            if s.quiet is not None:
                s.quiet.clear()
            s.quiet_failed = False
            records = s.outbox.pending_records()
            log.warning("producer.reconnected", cluster=s.spec.name, resent=len(records),
                        reason=getattr(old, "fatal", None) or "a report failed")  # fmt: skip
            self.replay(new, records)
            s.resent += len(records)
        # A producer that failed for good may refuse each of these; its reports are ignored
        # (older generation), and it is closed whatever the others did.
        for step in (lambda: old.purge(in_queue=True, in_flight=True, blocking=False), lambda: old.poll(0), old.close):
            with contextlib.suppress(Exception):
                step()

    def _expire(self) -> None:
        s = self._s
        assert s.expiry is not None
        with s.lock:
            expired = s.expiry.expired()
            for record in expired:
                record.reported = True
                s.outbox.refused(record.slot, record.size)
        err = KafkaError(KafkaError._MSG_TIMED_OUT)
        for r in expired:
            if r.on_delivery is not None:
                r.on_delivery(err, Message(topic=r.topic, partition=r.partition, key=r.key, value=r.value,
                                           headers=list(r.headers), error=err, timestamp=(1, r.timestamp)))  # fmt: skip

    def _marked(self, marker: Record, generation: int, err: KafkaError | None, msg: Message) -> None:
        with self._s.interrupts.watching():  # a Ctrl-C here must reach flush()'s caller
            s = self._s
            with s.lock:
                if generation != s.generation or s.quiet is None:
                    return  # from a connection given up in a switch: its records were sent again
                if err is not None:
                    # Under the gapless guarantee a failure is fatal for the connection: what was
                    # sent on it stays pending, and a new connection sends it again (settle).
                    if not s.quiet_failed:  # once per connection
                        log.error("producer.report_failed", cluster=s.spec.name, topic=marker.topic,
                                  partition=marker.partition, error=err.str(),
                                  note="records without a report are sent again on a new connection")  # fmt: skip
                    s.quiet_failed = True
                    return
                self._failed_in_a_row = 0
                offset = msg.offset()
                # A report without an offset places nothing: the records enter the window without one.
                at = offset if offset is not None and offset >= 0 else None
                records, low = s.quiet.through(marker, 0 if at is None else at)
                stored = (
                    None if at is None
                    else Stored(s.spec.name, marker.topic, marker.partition, at, int(time.time() * 1000), at - low)
                )  # fmt: skip
                acknowledged = s.outbox.acknowledged
                for record in records:
                    acknowledged(record.slot, record.size, stored)

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
                self._failed_in_a_row = 0
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
            elif record.on_delivery is None:
                seldom.warning("producer.record_refused", topic=record.topic, partition=record.partition,
                               error=err.str(), note="no delivery callback to tell: dropped, as confluent-kafka drops it")  # fmt: skip
            if not record.reported:
                record.reported = True
                report = record.on_delivery
        if report is not None and (err is not None or not self._only_errors):
            report(err, msg)
