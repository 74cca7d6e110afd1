"""``hotstandby.adapters.kafka.Producer``: confluent_kafka.Producer that follows a route.

Every record gets an ``hs-id`` header (producer session, partition, sequence) and goes to a
partition the SDK chose (murmur2 of the key like the Java client, sticky when unkeyed). What
is pending and the replay window are the core's outbox (:mod:`hotstandby.failover.outbox`).

On a switch the producer builds a client for the new cluster, drains the old one when it still
answers (``hotstandby.drain.timeout.ms``), purges it, and re-sends — same hs-id, same
partition, in order — what the outbox says: every pending record and every record of the
replay window that replication has not provably copied to the new cluster (MM2's position
there, see replication_progress) and that the new cluster does not hold from before (a
producer flipped back, see held_records); then new records follow. Records the old cluster stored
twice, or that replication copied, are filtered by consumers by their hs-id. ``on_delivery``
fires exactly once per produced record. ``hotstandby.on_switch`` (a callable in the
configuration) is given each switch event (docs/observability.md). With ``transactional.id``,
transactions run on the cluster in use (``transactions``: what a switch does to them).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.adapter import ADAPTER
from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.adapters.kafka.mm2.replication_progress import read_positions
from hotstandby.adapters.kafka.producer.callback_interrupts import CallbackInterrupts
from hotstandby.adapters.kafka.producer.extras import ProducerExtras, ProducerSwitching
from hotstandby.adapters.kafka.producer.held_records import Held, still_held
from hotstandby.adapters.kafka.producer.partition_counts import METADATA_TIMEOUT_S, PartitionCounts
from hotstandby.adapters.kafka.producer.transactions import Transactions, Txn
from hotstandby.adapters.kafka.surface import (
    HANDLE_CLOSED,
    DeliveryCallback,
    as_bytes,
    config_dict,
    delivery_settings,
    headers_list,
    int_setting,
)
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.failover.outbox import Outbox, ReplicatedTo, Stored
from hotstandby.failover.partitioner import Partitioner
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_events import ClientCounts
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import Seldom, get_logger

__all__ = ["Producer"]

log = get_logger("hotstandby.kafka.producer")
seldom = Seldom(log)

_HANDLE_METHODS = frozenset({"list_topics", "cluster_id", "set_sasl_credentials"})
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)
_DEFAULT_PROPAGATION_MS = 30_000  # librdkafka's topic.metadata.propagation.max.ms default
_DEFAULT_MAX_PENDING = 100_000  # librdkafka's queue.buffering.max.messages default
_DEFAULT_MAX_KBYTES = 1_048_576  # librdkafka's queue.buffering.max.kbytes default
_MAX_KBYTES = _MAX_QUEUE = 2_147_483_647  # the largest queue.buffering.max.kbytes/.messages librdkafka takes
_DEFAULT_MESSAGE_TIMEOUT_MS = 300_000  # librdkafka's message.timeout.ms default


@dataclass(eq=False, slots=True)
class _Record:
    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, str | bytes | None]]
    timestamp: int
    rid: RecordId
    on_delivery: DeliveryCallback | None
    size: int
    reported: bool = False
    txn: Txn | None = None  # the application's transaction it was produced in
    slot: tuple[str, int, int] = ("", 0, 0)  # its key in the outbox: (topic, partition, sequence)

    def __post_init__(self) -> None:
        self.slot = (self.topic, self.partition, self.rid.sequence)


class _Closed:
    """Stands in for the client after :meth:`Producer.close`, failing as confluent-kafka's does."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(HANDLE_CLOSED if name in _HANDLE_METHODS else "Producer has been closed")


class Producer(ProducerExtras, RouteClient):
    """Drop-in replacement for :class:`confluent_kafka.Producer` (see the module doc)."""

    # An object of a subclass whose __init__ did not call this one is closed, as confluent-kafka's.
    _closed = True
    _inner: RawProducer = _Closed()  # type: ignore[assignment]

    def __init__(
        self, config: dict[str, Any] | None = None, *, center: ConfigCenter | None = None, **kwargs: Any
    ) -> None:
        """``center`` (a :class:`ConfigCenter`, left open on close) replaces the one the
        producer would open itself. Raises as confluent-kafka does: ``TypeError`` without a
        configuration dict, ``KafkaException`` (``_INVALID_ARG``) for a bad setting."""
        # As confluent-kafka, keywords are configuration properties too (logger=...).
        config = config_dict(config, kwargs)
        self.options, raw = ClientOptions.split(config, role="producer")
        self._on_delivery, self._only_errors, self._raw_config = delivery_settings(raw)
        self._max_pending = int_setting(self._raw_config, "queue.buffering.max.messages", _DEFAULT_MAX_PENDING)
        # Checked here, read in _connect (with the cluster's client settings under it).
        int_setting(self._raw_config, "queue.buffering.max.kbytes", _DEFAULT_MAX_KBYTES)
        self._message_timeout_ms = int_setting(self._raw_config, "message.timeout.ms", _DEFAULT_MESSAGE_TIMEOUT_MS)
        self._closed = False
        self._follower = RouteFollower(self.options, "kafka", role="producer", center=center)
        self._lock = threading.RLock()
        self._session = self.options.producer_session or new_session()
        self._sequences: dict[tuple[str, int], int] = {}
        self._interrupts = CallbackInterrupts()
        self._outbox: Outbox[tuple[str, int, int], _Record] = Outbox(
            self.options.replay_window_ms, self.options.replay_window_bytes
        )
        self._partitioner = Partitioner(self.options.partitioner or ADAPTER.default_partitioner)
        # Kept across switches: a replicated topic has the same partitions on every cluster.
        self._partition_counts = PartitionCounts(
            int_setting(self._raw_config, "topic.metadata.propagation.max.ms", _DEFAULT_PROPAGATION_MS)
        )
        self._generation = 0
        self._user_purge = False
        self.resent = 0
        self.trimmed = 0  # window records not re-sent: replication had copied them
        self.held = 0  # window records not re-sent: the new cluster held them from before
        self.switches = 0
        self._move: tuple[RawProducer, dict[tuple[str, int], ReplicatedTo], Held | None] | None = None
        self._old: RawProducer | None = None
        self._switching = ProducerSwitching(self)
        self._transactions = Transactions(self, "transactional.id" in self._raw_config)
        self._inner = self._join(self._connect, self._switching, SwitchGate(self._lock),
                                 lambda: ClientCounts(resent=self.resent))  # fmt: skip

    # -- connections ----------------------------------------------------------------------

    def _connect(self, spec: ClusterSpec) -> RawProducer:
        config = {**spec.client_config("producer"), **self._raw_config, "bootstrap.servers": spec.url}
        # The SDK's re-send gets a share of librdkafka's queue next to the application's (as
        # large, and the replay window's bytes): the application's own records are limited by
        # queue.buffering.max.messages in produce(), the re-send by _replay.
        kbytes = int_setting(config, "queue.buffering.max.kbytes", _DEFAULT_MAX_KBYTES)
        config["queue.buffering.max.messages"] = min(_MAX_QUEUE, 2 * self._max_pending)
        config["queue.buffering.max.kbytes"] = min(_MAX_KBYTES, kbytes + self.options.replay_window_bytes // 1024 + 1)
        return RawProducer(self._interrupts.logging(with_logger(config)))

    # -- producing ------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: Any = None,
        callback: DeliveryCallback | None = None,
    ) -> None:
        """As :meth:`confluent_kafka.Producer.produce`; raises ``BufferError`` when the queue is full."""
        if self._closed:
            raise RuntimeError("Producer has been closed")
        key_b, value_b, header_list = as_bytes(key, 3), as_bytes(value, 2), headers_list(headers)
        with self._lock:
            if self._outbox.own_pending >= self._max_pending:
                raise BufferError("Local: Queue full")
            txn = self._transactions.for_record()  # before a sequence is taken: a refused record leaves no gap
            if partition < 0:
                partition = self._partitioner.partition(topic, key_b, self._partition_counts.get(self._inner, topic))
            seq = self._sequences.get((topic, partition), 0)
            self._sequences[(topic, partition)] = seq + 1
            rid = RecordId(self._session, partition, seq)
            record = _Record(
                topic=topic,
                partition=partition,
                key=key_b,
                value=value_b,
                headers=[*header_list, (HEADER, rid.encode())],
                # A fixed timestamp, so a re-sent copy carries the original one.
                timestamp=timestamp or int(time.time() * 1000),
                rid=rid,
                on_delivery=(
                    on_delivery if on_delivery is not None else callback if callback is not None else self._on_delivery
                ),
                size=len(key_b or b"") + len(value_b or b""),
                txn=txn,
            )
            try:
                self._send(record, wait_s=0.0)
            except BufferError:
                self._sequences[(topic, partition)] = seq  # not sent: the sequence stays free
                raise
            self._outbox.add(record.slot, record)
            if txn is not None:
                txn.records.append(record)

    def _send(self, record: _Record, *, wait_s: float) -> None:
        """Hand a record to the current client; waits up to ``wait_s`` for room in its queue."""
        generation = self._generation
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self._inner.produce(
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
                self._inner.poll(0.05)

    def _delivered(self, record: _Record, generation: int, err: KafkaError | None, msg: Message) -> None:
        with self._interrupts.watching():  # a Ctrl-C here must reach flush()'s caller
            self._deliver(record, generation, err, msg)

    def _deliver(self, record: _Record, generation: int, err: KafkaError | None, msg: Message) -> None:
        report: DeliveryCallback | None = None
        with self._lock:
            if generation != self._generation:
                return  # from a connection given up in a switch: the record was sent again
            purged = err is not None and err.code() in _PURGED and not self._user_purge
            if purged and (record.txn is None or not record.txn.aborting):
                return  # purged by the SDK (a replay's transaction aborted): sent again, not reported
            if err is None:
                # A report without an offset proves nothing about replication: never trimmed.
                offset = msg.offset()
                stored = (
                    Stored(self._spec.name, record.topic, record.partition, offset, int(time.time() * 1000))
                    if offset is not None and offset >= 0
                    else None
                )
                self._outbox.acknowledged(record.slot, record.size, stored)
            elif self._outbox.refused(record.slot, record.size):
                seldom.warning("producer.replay_refused", topic=record.topic, partition=record.partition,
                               error=err.str(), note="kept in the replay window for the next switch")  # fmt: skip
            if not record.reported:
                record.reported = True
                report = record.on_delivery
        if report is not None and (err is not None or not self._only_errors):
            report(err, msg)

    # -- the confluent_kafka surface ------------------------------------------------------

    def __len__(self) -> int:
        """Records not acknowledged yet (across switches); 0 once closed, as confluent-kafka's."""
        return 0 if self._closed else self._outbox.pending

    def __bool__(self) -> bool:
        """Always true, as confluent-kafka's Producer (which has a length too)."""
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Flush (up to ``timeout`` s), stop following the route, release the client; returns
        True as confluent-kafka's (records left unacknowledged are logged). Closing twice is
        harmless; any other call afterwards raises ``RuntimeError``."""
        if self._closed:
            return True
        self._transactions.close(timeout)
        left = self.flush(timeout)
        self._follower.close()
        with self._lock:
            self._closed = True
            self._inner = _Closed()  # type: ignore[assignment]
        if left:
            log.warning("producer.closed_with_pending", client=self.options.client_id, pending=left)
        return True

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- switching ------------------------------------------------------------------------

    # The switch protocol (hotstandby.failover.switch_protocol), through ProducerSwitching; produce()
    # waits on the lock, which the gate is built on, so new records queue behind the re-send.

    def _switch_drain(self, plan: SwitchPlan) -> None:
        """A planned switch: let the old cluster acknowledge what it has (if it answers)."""
        drain_s = plan.drain_timeout_s
        if self._outbox.pending and probe_cluster(self._spec, timeout=min(1.0, drain_s)).ok:
            self._inner.flush(drain_s)

    def _switch_store(self, plan: SwitchPlan) -> None:
        """Nothing to store: what the producer keeps (pending, window) moves with it."""

    def _switch_connect(self, plan: SwitchPlan) -> None:
        new = self._connect(plan.destination)
        try:
            new.list_topics(timeout=METADATA_TIMEOUT_S)  # raises if the new cluster does not answer
            self._transactions.connect(new)
            positions, held = self._window_checks(plan)
        except BaseException:
            new.close()  # a failed attempt leaves no connection behind (the next one makes its own)
            raise
        self._move = (new, positions, held)

    def _switch_abort(self, plan: SwitchPlan) -> None:
        self._transactions.abort_connect()
        move, self._move = self._move, None
        if move is not None:
            move[0].close()

    def _switch_move(self, plan: SwitchPlan) -> None:
        assert self._move is not None, "move without connect"
        (new, positions, held), self._move = self._move, None
        # Held until resume: a transactional call in progress ends first, the application's
        # next one waits for the replay's transaction.
        self._transactions.lock.acquire()
        try:
            with self._lock:
                self._generation += 1
                self._old = self._inner
                self._old.purge(in_queue=True, in_flight=True, blocking=False)
                self._inner, self._spec = new, plan.destination
                self._transactions.move(self._old, new, plan)
                replay = self._outbox.replay(plan.current.active, positions, self.options.timestamp_skew_ms, held)
                self.trimmed += replay.trimmed
                self.held += replay.held
                self._transactions.begin_replay(new, replay.records)
                self._replay(new, replay.records)
                self.resent += len(replay.records)
                self.switches += 1
        except BaseException:
            self._transactions.lock.release()
            raise
        log.info("producer.switched", client=self.options.client_id, source=plan.current.active, to=plan.target.active,
                 epoch=plan.target.epoch, resent=len(replay.records), replicated=replay.trimmed,
                 held=replay.held)  # fmt: skip

    def _switch_resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        closable = self._transactions.resume(old, plan)
        if old is not None:
            old.poll(0)  # callbacks of the old client are ignored (older generation)
            if closable:
                old.close()  # nothing is left in it (purged): it stops reconnecting to the old cluster

    def _replay(self, new: RawProducer, records: list[_Record]) -> None:
        """Re-send ``records`` in order (lock held: new records wait behind them), keeping the
        replay window's records in ``new``'s queue within the SDK's share of it, so that the
        application's records find the room they would find with confluent-kafka."""
        timeout_s = self._message_timeout_ms / 1000
        deadline = time.monotonic() + (timeout_s if timeout_s > 0 else _DEFAULT_MESSAGE_TIMEOUT_MS / 1000)
        for record in records:
            # In the queue: the application's pending records, and at most a share of the window's.
            while len(new) >= self._max_pending + self._outbox.own_pending:
                if time.monotonic() >= deadline:
                    raise BufferError(f"re-send: no room in the queue within {timeout_s:.0f} s")
                new.poll(0.05)
            self._send(record, wait_s=max(0.0, deadline - time.monotonic()))

    def _window_checks(self, plan: SwitchPlan) -> tuple[dict[tuple[str, int], ReplicatedTo], Held | None]:
        """What proves window records on the new cluster: MM2's position there (the plan's link),
        and what it holds from before (held_records; not in transactions: they may abort)."""
        target, timeout = plan.destination, min(METADATA_TIMEOUT_S, plan.drain_timeout_s + 1)
        link: Link | None = plan.links.get((plan.current.active, target.name))
        positions = read_positions(target, link, timeout=timeout) if link and self._outbox.in_window else {}
        with self._lock:  # produce() adds to the window meanwhile
            stored_there = {} if self._transactions.enabled else self._outbox.stored_on(target.name)
        return positions, still_held(target, stored_there, timeout=timeout)
