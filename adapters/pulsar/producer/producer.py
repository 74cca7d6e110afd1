"""``Producer`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.Producer across switches.

Every message gets an ``hs-id`` property (producer session, partition, sequence; hex) and
goes to a partition the SDK chose — ``java-string`` of the partition key like the Pulsar Java
client, sticky round-robin without a key — through a ``message_router`` that reads the
partition back from the identity. What is pending and the replay window are the core's
outbox (:mod:`hotstandby.failover.outbox`).

In a switch the producer lets the old cluster acknowledge what it has if it answers, makes
its counterpart on the new cluster, and re-sends in order, same properties and partition,
every pending message and the replay window less what geo-replication provably copied
(:mod:`hotstandby.adapters.pulsar.producer.replication_position`). The callback of ``send_async``
fires once per message: with the result on the cluster that acknowledged it last, or the
failure pulsar-client reported (then it is not sent again).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import pulsar
from pulsar.schema import Schema

from hotstandby.adapters.pulsar.adapter import ADAPTER, decode_identity
from hotstandby.adapters.pulsar.producer.message import BYTES, Encoded, Message, SendCallback, exception_for
from hotstandby.adapters.pulsar.producer.replication_position import offset_of
from hotstandby.adapters.pulsar.producer.resend import Resend
from hotstandby.adapters.pulsar.producer.switch_waits import flush_within, replication_positions
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError
from hotstandby.failover.identity import HEADER, IdentityText, new_session
from hotstandby.failover.outbox import Outbox, ReplicatedTo, Stored
from hotstandby.failover.partitioner import Partitioner
from hotstandby.failover.probe import probe_cluster
from hotstandby.logs import Seldom, get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Client

__all__ = ["Producer"]

log = get_logger("hotstandby.pulsar.producer")
seldom = Seldom(log)

_SEND_OPTIONS = frozenset(("partition_key", "ordering_key", "sequence_id", "replication_clusters",
                           "disable_replication", "event_timestamp", "deliver_at", "deliver_after"))  # fmt: skip
# pulsar.Result is a pybind11 enum: == costs ~1 µs, .value a third of it (once per message).
_OK = pulsar.Result.Ok.value
_NO_LIMIT_S = 300.0  # how long send() and flush() wait when send_timeout_millis is 0 (no limit)
_FULL = pulsar.Result.ProducerQueueIsFull
_CLOSED = pulsar.Result.AlreadyClosed


class Producer:
    """Drop-in replacement for :class:`pulsar.Producer` (see the module doc)."""

    def __init__(self, client: Client, topic: str, kwargs: dict[str, Any]) -> None:
        self._kwargs = dict(kwargs)
        mode = self._kwargs.pop("message_routing_mode", pulsar.PartitionsRoutingMode.RoundRobinDistribution)
        if "message_router" in kwargs or mode == pulsar.PartitionsRoutingMode.CustomPartition:
            raise ConfigError("message_router must not be set: hotstandby chooses partitions (hotstandby.partitioner)")
        self._client = client
        self._topic = topic
        # send(obj) encodes with the schema here; pulsar-client gets the bytes and the schema info.
        self._schema: Schema | None = self._kwargs.pop("schema", None)
        if self._schema is not None:
            if not isinstance(self._schema, Schema):
                raise ValueError(f"Argument schema is expected to be of type 'Schema' and not '{type(self._schema)}'")
            self._kwargs["schema"] = Encoded(self._schema)
        options = client.options
        # _lock guards the state and is all an acknowledgement needs; _send_lock keeps sends in
        # sequence order and is held while pulsar-client may block (a full queue), which must
        # not hold up acknowledgements.
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()
        self._delivered_cv = threading.Condition(self._lock)  # notified when nothing is pending
        self._session = options.producer_session or new_session()
        self._identity = IdentityText(self._session)
        self._sequences: dict[int, int] = {}
        self._outbox: Outbox[tuple[int, int], Message] = Outbox(options.replay_window_ms, options.replay_window_bytes)
        self._partitioner = Partitioner(options.partitioner or ADAPTER.default_partitioner)
        timeout_ms = int(self._kwargs.get("send_timeout_millis", 30_000))
        self._wait_s = timeout_ms / 1000 + options.drain_timeout_ms / 1000 + 5 if timeout_ms > 0 else _NO_LIMIT_S
        self._generation = 0
        self._closed = False
        self.resent = 0
        self.trimmed = 0  # window messages not re-sent: replication had copied them
        self._cluster = client.spec.name  # where the current generation's messages go
        self._source_answered = False  # in a switch: the cluster left answered the drain
        partitions = client.inner.get_topic_partitions(topic)
        self._partition_names = partitions
        self._partitions = len(partitions)
        # UseSinglePartition: messages without a key go to one partition, chosen at random.
        self._single = (
            random.randrange(self._partitions) if mode == pulsar.PartitionsRoutingMode.UseSinglePartition else None
        )
        self._partitioned = partitions != [topic]
        # After a switch the SDK's re-send goes first (resend.py); pulsar's queue takes the
        # smaller of max_pending_messages and its share of the limit across partitions.
        limit = int(self._kwargs.get("max_pending_messages", 1000))
        across = int(self._kwargs.get("max_pending_messages_across_partitions", 50_000))
        queue = min(limit, across // self._partitions) if self._partitioned else limit
        self._resend = Resend(
            self._lock,
            self._outbox,
            limit=limit,
            block=bool(self._kwargs.get("block_if_queue_full", False)),
            wait_s=self._wait_s,
            capacity=max(1, queue) if queue > 0 else 1000,
            current=lambda generation: generation == self._generation and not self._closed,
            send=self._send,
        )
        # The partition of the message being sent, for the message router, which pulsar-client
        # calls in the sending thread (under _send_lock): (thread, partition).
        self._routing: tuple[int, int] = (0, 0)
        self._inner = self._create(client.inner)

    def _create(self, client: pulsar.Client) -> pulsar.Producer:
        router = self._route if self._partitioned else None
        return client.create_producer(self._topic, **self._kwargs, message_router=router)

    def _route(self, msg: pulsar.Message, partitions: int) -> int:
        """The SDK chose the partition (and wrote it into the identity)."""
        thread, partition = self._routing
        if thread != threading.get_ident():  # not called from the sending thread after all
            partition = decode_identity(msg.properties()[HEADER]).partition
        return partition % partitions

    # -- the pulsar.Producer surface --------------------------------------------------------

    def topic(self) -> str:
        return str(self._inner.topic())  # the full name, as pulsar-client gives it

    def producer_name(self) -> str:
        return str(self._inner.producer_name())

    def last_sequence_id(self) -> int:
        return int(self._inner.last_sequence_id())

    def is_connected(self) -> bool:
        return bool(self._inner.is_connected())

    def send_async(
        self, content: Any, callback: SendCallback | None, properties: dict[str, str] | None = None, **options: Any
    ) -> None:
        """As :meth:`pulsar.Producer.send_async`; ``callback(result, message_id)`` fires once."""
        # Once per message, like the rest: each step here is kept cheap on purpose.
        if options:
            if not _SEND_OPTIONS.issuperset(options):
                unknown = sorted(options.keys() - _SEND_OPTIONS)
                raise TypeError(f"send_async() got unexpected keyword arguments {unknown}")
            if None in options.values():
                options = {k: v for k, v in options.items() if v is not None}
        props = dict(properties) if properties else {}
        if HEADER in props:
            raise ValueError(f"the {HEADER!r} property is set by hotstandby; do not set it yourself")
        # As pulsar-client: None is a message with a null value; otherwise the schema encodes
        # (the default one takes bytes only: TypeError), and what it gives must be bytes.
        if content is not None and (self._schema is not None or type(content) is not bytes):
            content = (self._schema or BYTES).encode(content)
            if not isinstance(content, bytes):
                raise ValueError(f"Argument data is expected to be of type 'bytes' and not '{type(content).__name__}'")
        # _send_lock alone: it orders the sends, and Outbox.add (what an acknowledgement
        # changes too) is one dict operation; a switch holds both locks.
        with self._send_lock:
            if self._closed:  # as pulsar-client: the callback hears of it
                if callback is not None:
                    callback(_CLOSED, None)
                return
            if self._resend.active and not self._resend.admitted():
                if callback is not None:
                    callback(_FULL, None)  # as pulsar-client reports a full queue
                return
            if self._partitions == 1:
                partition = 0
            else:
                key = options.get("partition_key")
                if key is None and self._single is not None:
                    partition = self._single
                else:
                    partition = self._partitioner.partition(
                        self._topic, key.encode() if isinstance(key, str) else key, self._partitions
                    )
            seq = self._sequences.get(partition, 0)
            self._sequences[partition] = seq + 1
            props[HEADER] = self._identity.text(partition, seq)
            key = (partition, seq)
            message = Message(content, props, options, key, callback)
            self._outbox.add(key, message)
            try:
                if not self._resend.active or not self._resend.queue(message):
                    self._send(self._inner, self._generation, message)
            except BaseException:
                self._outbox.withdraw(key)  # pulsar-client refused it at once: the caller hears of it
                raise

    def send(self, content: Any, properties: dict[str, str] | None = None, **options: Any) -> Any:
        """As :meth:`pulsar.Producer.send`: the message id, or the failure raised."""
        done = threading.Event()
        outcome: list[tuple[pulsar.Result, Any]] = []

        def callback(result: pulsar.Result, message_id: Any) -> None:
            outcome.append((result, message_id))
            done.set()

        self.send_async(content, callback, properties, **options)
        if not done.wait(self._wait_s):
            raise pulsar.Timeout(f"no acknowledgement within {self._wait_s:.0f} s")
        result, message_id = outcome[0]
        if result.value != _OK:
            raise exception_for(result)
        return message_id

    def flush(self) -> None:
        """Wait until every message sent so far was acknowledged or failed (across switches)."""
        deadline = time.monotonic() + self._wait_s
        with self._lock:
            if self._closed:
                raise pulsar.AlreadyClosed("Pulsar error: AlreadyClosed")
            while self._outbox.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise pulsar.Timeout(f"{self._outbox.pending} messages unacknowledged after {self._wait_s:.0f} s")
                inner = self._inner
                self._lock.release()
                try:
                    inner.flush()  # returns early when a switch closes it
                except pulsar.PulsarException:
                    pass  # that connection was given up; the re-sent messages are pending again
                finally:
                    self._lock.acquire()
                if self._outbox.pending:
                    self._delivered_cv.wait(min(left, 0.1))

    def abandon(self) -> None:
        """The client shuts down: closed at once, nothing flushed (what is pending fails)."""
        with self._send_lock, self._lock:
            self._closed = True

    def close(self) -> None:
        """Flush, then close (the client stops moving this producer)."""
        try:
            self.flush()
        finally:
            with self._send_lock, self._lock:
                self._closed = True
                inner = self._inner
            self._client.retire(self, inner)

    def __len__(self) -> int:
        return self._outbox.pending

    # -- sending ----------------------------------------------------------------------------

    def _send(self, inner: pulsar.Producer, generation: int, message: Message) -> None:
        """Hand ``message`` to ``inner`` (``_send_lock`` held)."""
        if self._partitioned:
            self._routing = (threading.get_ident(), message.partition)
        inner.send_async(
            message.content,
            partial(self._acknowledged, message, generation),
            properties=message.properties,
            **message.options,
        )

    def _acknowledged(self, message: Message, generation: int, result: pulsar.Result, message_id: Any) -> None:
        with self._lock:
            if generation != self._generation:
                return  # a connection given up in a switch: the message was sent again
            if result.value == _OK:
                stored = None
                if message_id is not None:
                    offset = offset_of(message_id.ledger_id(), message_id.entry_id())
                    stored = Stored(self._cluster, self._topic, message.partition, offset, int(time.time() * 1000))
                self._outbox.acknowledged(message.key, message.size, stored)
            elif self._outbox.refused(message.key, message.size):
                seldom.warning("producer.replay_refused", topic=self._topic, result=str(result),
                               note="kept in the replay window for the next switch")  # fmt: skip
            else:
                seldom.warning("producer.send_failed", topic=self._topic, result=str(result))
            callback, message.callback = message.callback, None  # it fires once
            self._resend.acknowledged()
            if not self._outbox.pending:
                self._delivered_cv.notify_all()  # flush() waits for that
        if callback is not None:
            callback(result, message_id)

    # -- switching (run by the client) -------------------------------------------------------

    def drain(self, old: ClusterSpec) -> None:
        """Planned switch: let the old cluster acknowledge what it has, within the drain timeout."""
        self._source_answered = False
        with self._lock:
            inner, pending = self._inner, bool(self._outbox.pending)
        if not pending and not self._outbox.in_window:
            return
        timeout = self._client.options.drain_timeout_ms / 1000
        if not probe_cluster(old, timeout=min(1.0, timeout)).ok:
            return
        self._source_answered = True  # replication from it goes on: worth waiting for (prepare)
        if pending:
            flush_within(inner, timeout)

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """Make the counterpart on the new cluster; the returned step puts it in place and
        re-sends (run under the client's lock, once every member is prepared)."""
        new = self._create(client)
        with self._lock:
            self._resend.hold()  # new sends wait behind the switch: the window stops growing
            inner, pending = self._inner, bool(self._outbox.pending)
        if self._source_answered and pending:
            # Sent after the drain, before the gate closed: the old cluster acknowledges them
            # too, rather than their being re-sent here as twins of their copies.
            flush_within(inner, self._client.options.drain_timeout_ms / 1000)
        positions = self._replication_positions(client, source)

        def commit() -> None:
            with self._send_lock, self._lock:
                self._generation += 1
                self._inner, self._cluster = new, spec.name
                # With messages still replayed from a switch before.
                replayed = self._outbox.replay(source, positions, self._client.options.timestamp_skew_ms)
                replay = replayed.records
                for message in replay:
                    message.resent = True
                self.trimmed += replayed.trimmed
                self.resent += len(replay)
                self._resend.start(replay, new, self._generation)  # the held messages are pending: replayed
            log.info("producer.switched", topic=self._topic, source=source, to=spec.name, resent=len(replay),
                     replicated=replayed.trimmed)  # fmt: skip

        return commit

    def release(self) -> None:
        """The switch was given up: the messages held for it go to the cluster in use."""
        with self._send_lock:
            with self._lock:
                held = self._resend.release()
                inner, generation = self._inner, self._generation
            for message in held:  # not under _lock: a full pulsar queue waits for acknowledgements
                self._send(inner, generation, message)

    def _replication_positions(self, client: pulsar.Client, source: str) -> dict[tuple[str, int], ReplicatedTo]:
        """What the new cluster (``client``) shows copied from ``source``, for the window's sake."""
        with self._lock:  # acknowledgements move messages into the window meanwhile
            if not self._outbox.in_window:
                return {}

        def sent_only_there() -> dict[tuple[int, int], Stored]:  # never re-sent: no other cluster holds them
            with self._lock:
                return {
                    key: stored
                    for key, message, stored in self._outbox.window_stored()
                    if stored is not None and stored.cluster == source and not message.resent
                }

        options = self._client.options
        return replication_positions(
            client,
            self._topic,
            self._partition_names,
            source,
            session=self._session,
            sent_only_there=sent_only_there,
            drain_s=options.drain_timeout_ms / 1000,
            skew_ms=options.timestamp_skew_ms,
            only_other=len(self._client.follower.route.clusters) == 2,
            wait=self._source_answered,
        )
