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
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import pulsar
from pulsar.schema import Schema

from hotstandby.adapters.pulsar.adapter import ADAPTER, decode_identity
from hotstandby.adapters.pulsar.producer.message import BYTES, Encoded, Message, SendCallback, exception_for
from hotstandby.adapters.pulsar.producer.replication_position import copied_through, offset_of, own_copies
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import ConfigError
from hotstandby.failover.identity import HEADER, IdentityText, new_session
from hotstandby.failover.outbox import Outbox, ReplicatedTo, Stored, replicated
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
_PUMP_WAIT_S = 0.5  # the re-send's wait for room: acknowledgements wake it, this bounds each wait
_POSITIONS_BUDGET_S = 1.0  # a switch's look for replication's position, at most (for all partitions)
_REPLICATION_STALLED_S = 1.5  # a planned switch stops waiting for copies that long without progress


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
        # After a switch the SDK's re-send goes first, through _backlog, never more in flight
        # than pulsar's queue takes (_capacity); the application's messages queue behind it and
        # count against max_pending_messages as with pulsar-client, the replay window does not.
        self._limit = int(self._kwargs.get("max_pending_messages", 1000))
        self._block = bool(self._kwargs.get("block_if_queue_full", False))
        self._backlog: deque[Message] = deque()
        self._resending = False
        self._room = threading.Condition(self._lock)  # notified on acknowledgements while re-sending
        self._generation = 0
        self._closed = False
        self.resent = 0
        self.trimmed = 0  # window messages not re-sent: replication had copied them
        self._cluster = client.spec.name  # where the current generation's messages go
        self._source_answered = False  # in a switch: the cluster left answered the drain
        self._held_for_switch = False  # new sends wait in _backlog while a switch prepares
        partitions = client.inner.get_topic_partitions(topic)
        self._partition_names = partitions
        self._partitions = len(partitions)
        # UseSinglePartition: messages without a key go to one partition, chosen at random.
        self._single = (
            random.randrange(self._partitions) if mode == pulsar.PartitionsRoutingMode.UseSinglePartition else None
        )
        self._partitioned = partitions != [topic]
        across = int(self._kwargs.get("max_pending_messages_across_partitions", 50_000))
        queue = min(self._limit, across // self._partitions) if self._partitioned else self._limit
        self._capacity = max(1, queue) if queue > 0 else 1000
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
            if self._resending and not self._admitted():
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
                if not self._resending or not self._queue(message):
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

    def _admitted(self) -> bool:
        """While re-sending: room for one more message of the application (``_send_lock`` held)."""
        if self._limit <= 0:
            return True
        deadline = time.monotonic() + self._wait_s
        with self._lock:
            # Not while a switch holds the sends: no acknowledgement makes room before it
            # commits, which needs the _send_lock this caller holds.
            while self._resending and not self._held_for_switch and self._outbox.own_pending >= self._limit:
                left = deadline - time.monotonic()
                if not self._block or left <= 0:
                    return False
                self._room.wait(min(left, _PUMP_WAIT_S))
        return True

    def _queue(self, message: Message) -> bool:
        """Put ``message`` behind the re-send; False when that ended meanwhile (send it now)."""
        with self._lock:
            if not self._resending:
                return False
            self._backlog.append(message)
            self._room.notify_all()
            return True

    def _pump(self, inner: pulsar.Producer, generation: int) -> None:
        """Hand the backlog to ``inner`` in order, never more in flight than its queue takes;
        ends when all is handed over and the replayed messages are acknowledged again."""
        while True:
            with self._lock:
                while True:
                    if generation != self._generation or self._closed:
                        return
                    backlog = self._backlog
                    if backlog:
                        room = self._capacity - (self._outbox.pending - len(backlog))
                        if room > 0:
                            batch = [backlog.popleft() for _ in range(min(room, len(backlog)))]
                            break
                    elif self._outbox.replaying <= 0:
                        # Everything is in pulsar's queue, and only the application's messages
                        # occupy it: sends go straight to it again.
                        self._resending = False
                        self._room.notify_all()
                        return
                    self._room.wait(_PUMP_WAIT_S)
            for message in batch:
                self._send(inner, generation, message)

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
            if self._resending:
                self._room.notify_all()  # the re-send and blocked sends wait for room
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
            _flush_within(inner, timeout)

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """Make the counterpart on the new cluster; the returned step puts it in place and
        re-sends (run under the client's lock, once every member is prepared)."""
        new = self._create(client)
        with self._lock:
            if not self._resending:  # new sends wait behind the switch: the window stops growing
                self._resending = self._held_for_switch = True
            inner, pending = self._inner, bool(self._outbox.pending)
        if self._source_answered and pending:
            # Sent after the drain, before the gate closed: the old cluster acknowledges them
            # too, rather than their being re-sent here as twins of their copies.
            _flush_within(inner, self._client.options.drain_timeout_ms / 1000)
        positions = self._replication_positions(client, source)

        def commit() -> None:
            with self._send_lock, self._lock:
                self._held_for_switch = False  # the held messages are pending: replayed below
                self._generation += 1
                self._inner, self._cluster = new, spec.name
                # With messages still replayed from a switch before.
                replayed = self._outbox.replay(source, positions, self._client.options.timestamp_skew_ms)
                replay = replayed.records
                for message in replay:
                    message.resent = True
                self.trimmed += replayed.trimmed
                self._backlog = deque(replay)
                self._resending = bool(replay)
                self.resent += len(replay)
                if replay:
                    pump = threading.Thread(target=self._pump, args=(new, self._generation), daemon=True,
                                            name="hotstandby-resend")  # fmt: skip
                    pump.start()
            log.info("producer.switched", topic=self._topic, source=source, to=spec.name, resent=len(replay),
                     replicated=replayed.trimmed)  # fmt: skip

        return commit

    def release(self) -> None:
        """The switch was given up: the messages held for it go to the cluster in use."""
        with self._send_lock:
            with self._lock:
                if not self._held_for_switch:
                    return
                self._held_for_switch = self._resending = False
                held, self._backlog = list(self._backlog), deque()
                inner, generation = self._inner, self._generation
                self._room.notify_all()
            for message in held:  # not under _lock: a full pulsar queue waits for acknowledgements
                self._send(inner, generation, message)

    def _replication_positions(self, client: pulsar.Client, source: str) -> dict[tuple[str, int], ReplicatedTo]:
        """What the new cluster (``client``) shows copied from ``source``, for the window's sake."""
        if not self._outbox.in_window:  # the length of a deque: read without the lock
            return {}

        def sent_only_there() -> dict[tuple[int, int], Stored]:  # never re-sent: no other cluster holds them
            with self._lock:
                return {key: stored for key, message, stored in self._outbox.window_stored()
                        if stored is not None and stored.cluster == source and not message.resent}  # fmt: skip

        drain_s = self._client.options.drain_timeout_ms / 1000
        found: dict[tuple[str, int], ReplicatedTo] = {}
        progress = [time.monotonic()]  # when replication was last seen to move on

        def look() -> bool:
            """Whether to stop looking: replication copied every window record sent to the
            source only, or the new cluster proves nothing at all (pulsar-lite), or replication
            has not moved on for a while (stuck: waiting longer spares nothing)."""
            before = dict(found)
            found.update(copied_through(client, self._topic, self._partition_names, source,
                                        budget_s=min(_POSITIONS_BUDGET_S, drain_s),
                                        only_other=len(self._client.follower.route.clusters) == 2,
                                        ours=own_copies(self._session, sent_only_there)))  # fmt: skip
            if found != before:
                progress[0] = time.monotonic()
            skew = self._client.options.timestamp_skew_ms
            return (
                not found
                or time.monotonic() - progress[0] > _REPLICATION_STALLED_S
                or all(replicated(stored, source, found, skew) for stored in sent_only_there().values())
            )

        # A source that answered the drain still replicates what it acknowledged last: waiting
        # (within the drain timeout) for those copies spares re-sent twins, which consumers of
        # different processes could each hand out.
        if self._source_answered:
            wait_until(look, drain_s, first=0.02, most=0.2)
        else:
            look()
        return found


def _flush_within(producer: pulsar.Producer, timeout: float) -> None:
    """Flush ``producer``, waiting ``timeout`` s at most: pulsar's flush has no timeout, so it
    runs aside, and the switch goes on after the wait."""
    flusher = threading.Thread(target=_flush_quietly, args=(producer,), daemon=True, name="hotstandby-drain")
    flusher.start()
    flusher.join(timeout)


def _flush_quietly(producer: pulsar.Producer) -> None:
    try:
        producer.flush()
    except pulsar.PulsarException as exc:
        log.info("producer.drain_flush_failed", error=str(exc))
