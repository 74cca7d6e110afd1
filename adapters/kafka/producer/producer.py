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

import time
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.adapter import ADAPTER
from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.adapters.kafka.producer.expiry import Expiry
from hotstandby.adapters.kafka.producer.extras import ProducerExtras
from hotstandby.adapters.kafka.producer.partition_counts import PartitionCounts
from hotstandby.adapters.kafka.producer.quiet import QuietConnection, QuietRuns, is_fatal, quiet_allowed
from hotstandby.adapters.kafka.producer.sending import DEFAULT_MESSAGE_TIMEOUT_MS, Sender
from hotstandby.adapters.kafka.producer.state import CLOSED, ProducerState, Record
from hotstandby.adapters.kafka.producer.switch import ProducerSwitch
from hotstandby.adapters.kafka.producer.transactions import Transactions
from hotstandby.adapters.kafka.surface import (
    DeliveryCallback,
    as_bytes,
    config_dict,
    delivery_settings,
    headers_list,
    int_setting,
)
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower
from hotstandby.failover.identity import HEADER, id_prefix, new_session, with_sequence
from hotstandby.failover.partitioner import Partitioner
from hotstandby.failover.switch_events import ClientCounts
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.logs import get_logger

__all__ = ["Producer"]

log = get_logger("hotstandby.kafka.producer")

_DEFAULT_PROPAGATION_MS = 30_000  # librdkafka's topic.metadata.propagation.max.ms default
_DEFAULT_MAX_PENDING = 100_000  # librdkafka's queue.buffering.max.messages default
_DEFAULT_MAX_KBYTES = 1_048_576  # librdkafka's queue.buffering.max.kbytes default
_MAX_KBYTES = _MAX_QUEUE = 2_147_483_647  # the largest queue.buffering.max.kbytes/.messages librdkafka takes


class Producer(ProducerExtras, RouteClient):
    """Drop-in replacement for :class:`confluent_kafka.Producer` (see the module doc)."""

    # An object of a subclass whose __init__ did not call this one is closed, as confluent-kafka's.
    _s: ProducerState = CLOSED

    def __init__(
        self, config: dict[str, Any] | None = None, *, center: ConfigCenter | None = None, **kwargs: Any
    ) -> None:
        """``center`` (a :class:`ConfigCenter`, left open on close) replaces the one the
        producer would open itself. Raises as confluent-kafka does: ``TypeError`` without a
        configuration dict, ``KafkaException`` (``_INVALID_ARG``) for a bad setting."""
        # As confluent-kafka, keywords are configuration properties too (logger=...).
        config = config_dict(config, kwargs)
        self.options, raw = ClientOptions.split(config, role="producer")
        self._on_delivery, only_errors, raw_config = delivery_settings(raw)
        # Checked here, read in _connect (with the cluster's client settings under it).
        int_setting(raw_config, "queue.buffering.max.kbytes", _DEFAULT_MAX_KBYTES)
        s = ProducerState(
            self.options,
            raw_config,
            max_pending=int_setting(raw_config, "queue.buffering.max.messages", _DEFAULT_MAX_PENDING),
            message_timeout_ms=int_setting(raw_config, "message.timeout.ms", DEFAULT_MESSAGE_TIMEOUT_MS),
        )
        self._follower = RouteFollower(self.options, "kafka", role="producer", center=center)
        self._session = self.options.producer_session or new_session()
        # Per (topic, partition): the next sequence, and what its identities start with.
        self._numbering: dict[tuple[str, int], list[Any]] = {}
        self._partitioner = Partitioner(self.options.partitioner or ADAPTER.default_partitioner)
        # Kept across switches: a replicated topic has the same partitions on every cluster.
        self._partition_counts = PartitionCounts(
            int_setting(raw_config, "topic.metadata.propagation.max.ms", _DEFAULT_PROPAGATION_MS)
        )
        if quiet_allowed(raw_config, self._on_delivery is not None):
            s.quiet = QuietRuns()
            if s.message_timeout_ms > 0:
                s.expiry = Expiry(s.message_timeout_ms)
        self._s = s
        self._sender = Sender(s, only_errors=only_errors, connect=self._connect)
        self._transactions = Transactions(s, self._sender.replay, "transactional.id" in raw_config)
        self._switch = ProducerSwitch(s, self._sender, self._transactions, self._connect)
        s.inner = self._join(self._connect, self._switch, SwitchGate(s.lock), lambda: ClientCounts(resent=s.resent))

    @property
    def _spec(self) -> ClusterSpec:  # RouteClient's cluster in use
        return self._s.spec

    @_spec.setter
    def _spec(self, spec: ClusterSpec) -> None:
        self._s.spec = spec

    @property
    def resent(self) -> int:
        """Records re-sent by switches."""
        return self._s.resent

    @property
    def trimmed(self) -> int:
        """Window records not re-sent at switches: replication had copied them."""
        return self._s.trimmed

    @property
    def held(self) -> int:
        """Window records not re-sent at switches: the new cluster held them from before."""
        return self._s.held

    @property
    def switches(self) -> int:
        """Switches this producer made."""
        return self._s.switches

    # -- connections ----------------------------------------------------------------------

    def _connect(self, spec: ClusterSpec) -> RawProducer:
        s = self._s
        config = {**spec.client_config("producer"), **s.raw_config, "bootstrap.servers": spec.url}
        # The SDK's re-send gets a share of librdkafka's queue next to the application's (as
        # large, and the replay window's bytes): the application's own records are limited by
        # queue.buffering.max.messages in produce(), the re-send by Sender.replay.
        kbytes = int_setting(config, "queue.buffering.max.kbytes", _DEFAULT_MAX_KBYTES)
        config["queue.buffering.max.messages"] = min(_MAX_QUEUE, 2 * s.max_pending)
        config["queue.buffering.max.kbytes"] = min(_MAX_KBYTES, kbytes + self.options.replay_window_bytes // 1024 + 1)
        config = s.interrupts.logging(with_logger(config))
        return QuietConnection(config) if s.quiet is not None else RawProducer(config)

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
        s = self._s
        if s.closed:
            raise RuntimeError("Producer has been closed")
        key_b, value_b, header_list = as_bytes(key, 3), as_bytes(value, 2), headers_list(headers)
        report = on_delivery if on_delivery is not None else callback if callback is not None else self._on_delivery
        with s.lock:
            if s.outbox.own_pending >= s.max_pending:
                raise BufferError("Local: Queue full")
            # Before a sequence is taken: a refused record leaves no gap.
            txn = self._transactions.for_record() if self._transactions.enabled else None
            if partition < 0:
                partition = self._partitioner.partition(topic, key_b, self._partition_counts.get(s.inner, topic))
            slot = (topic, partition)
            numbering = self._numbering.get(slot)
            if numbering is None:
                numbering = self._numbering[slot] = [0, id_prefix(self._session, partition)]
            seq = numbering[0]
            numbering[0] = seq + 1
            record = Record(
                topic,
                partition,
                key_b,
                value_b,
                (*header_list, (HEADER, with_sequence(numbering[1], seq))),
                # A fixed timestamp, so a re-sent copy carries the original one.
                timestamp or int(time.time() * 1000),
                seq,
                report,
                len(key_b or b"") + len(value_b or b""),
                txn,
            )
            for attempt in range(2):
                try:
                    if report is None and txn is None and s.quiet is not None:
                        self._sender.send_quiet(record)
                    else:
                        self._sender.send(record, wait_s=0.0)
                        if s.expiry is not None and report is not None:
                            s.expiry.watch(record)
                    break
                except BufferError:
                    numbering[0] = seq  # not sent: the sequence stays free
                    raise
                except KafkaException as exc:
                    # A quiet producer's connection failed for good: a new one takes over, once.
                    if attempt or s.quiet is None or not is_fatal(exc):
                        numbering[0] = seq
                        raise
                    s.quiet_failed = True
                    self._sender.reconnect(at_once=True)
            s.outbox.add(record.slot, record)
            if txn is not None:
                txn.records.append(record)

    # -- the confluent_kafka surface ------------------------------------------------------

    def __len__(self) -> int:
        """Records not acknowledged yet (across switches); 0 once closed, as confluent-kafka's."""
        if self._s.closed:
            return 0
        self._sender.settle()
        return self._s.outbox.pending

    def __bool__(self) -> bool:
        """Always true, as confluent-kafka's Producer (which has a length too)."""
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Flush (up to ``timeout`` s), stop following the route, release the client; returns
        True as confluent-kafka's (records left unacknowledged are logged). Closing twice is
        harmless; any other call afterwards raises ``RuntimeError``."""
        if self._s.closed:
            return True
        self._transactions.close(timeout)
        left = self.flush(timeout)
        self._follower.close()
        with self._s.lock:
            self._s.close()
        if left:
            log.warning("producer.closed_with_pending", client=self.options.client_id, pending=left)
        return True

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
