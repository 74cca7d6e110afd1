"""``Producer`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.Producer across switches.

Every message gets an ``hs-id`` property (producer session, partition, sequence; hex) and
goes to a partition the SDK chose — ``java-string`` of the partition key like the Pulsar Java
client, sticky round-robin without a key — through a ``message_router`` that reads the
partition back from the identity. Until the cluster acknowledges it a message is *pending*;
afterwards it stays in the replay window for a while.

In a switch (run by the client) the producer lets the old cluster acknowledge what it has
when it still answers, makes its counterpart on the new cluster, and then re-sends — same
properties, same partition, in order — every pending message and the replay window. The
callback of ``send_async`` fires exactly once per message: with the result on the cluster
that acknowledged it last, or with the failure pulsar-client reported (then the message is
not sent again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.adapters.pulsar.adapter import decode_identity, encode_identity
from hotstandby.documents import ClusterSpec
from hotstandby.errors import ConfigError
from hotstandby.identity import HEADER, RecordId, new_session
from hotstandby.logs import get_logger
from hotstandby.partitioner import DEFAULT_KEYED, Partitioner
from hotstandby.probe import probe_cluster
from hotstandby.replay_window import ReplayWindow

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client import Client

__all__ = ["Producer"]

log = get_logger("hotstandby.pulsar.producer")

SendCallback = Callable[[pulsar.Result, Any], None]
_SEND_OPTIONS = ("partition_key", "ordering_key", "sequence_id", "replication_clusters", "disable_replication",
                 "event_timestamp", "deliver_at", "deliver_after")  # fmt: skip
_NO_LIMIT_S = 300.0  # how long send() and flush() wait when send_timeout_millis is 0 (no limit)


@dataclass(eq=False)
class _Message:
    content: bytes
    properties: dict[str, str]
    options: dict[str, Any]  # the send_async keywords given, passed again when re-sent
    rid: RecordId
    callback: SendCallback | None
    reported: bool = False

    @property
    def size(self) -> int:
        return len(self.content)


def _route_by_identity(msg: pulsar.Message, partitions: int) -> int:
    """The SDK chose the partition; it travels in the identity."""
    partition: int = decode_identity(msg.properties()[HEADER]).partition % partitions
    return partition


class Producer:
    """Drop-in replacement for :class:`pulsar.Producer` (see the module doc)."""

    def __init__(self, client: Client, topic: str, kwargs: dict[str, Any]) -> None:
        for own in ("message_router", "message_routing_mode"):
            if own in kwargs:
                raise ConfigError(f"{own} must not be set: hotstandby chooses partitions (hotstandby.partitioner)")
        self._client = client
        self._topic = topic
        self._kwargs = dict(kwargs)
        options = client.options
        # _lock guards the state and is all an acknowledgement needs; _send_lock keeps sends in
        # sequence order and is held while pulsar-client may block (a full queue), which must
        # not hold up acknowledgements.
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()
        self._delivered_cv = threading.Condition(self._lock)
        self._session = new_session()
        self._sequences: dict[int, int] = {}
        self._pending: dict[tuple[int, int], _Message] = {}
        self._window: ReplayWindow[_Message] = ReplayWindow(options.replay_window_ms, options.replay_window_bytes)
        self._partitioner = Partitioner(options.partitioner or DEFAULT_KEYED["pulsar"])
        timeout_ms = int(self._kwargs.get("send_timeout_millis", 30_000))
        self._wait_s = timeout_ms / 1000 + options.drain_timeout_ms / 1000 + 5 if timeout_ms > 0 else _NO_LIMIT_S
        self._generation = 0
        self._closed = False
        self.resent = 0
        self._partitions = len(client.inner.get_topic_partitions(topic))
        self._partitioned = client.inner.get_topic_partitions(topic) != [topic]
        self._inner = self._create(client.inner)

    def _create(self, client: pulsar.Client) -> pulsar.Producer:
        router = _route_by_identity if self._partitioned else None
        return client.create_producer(self._topic, **self._kwargs, message_router=router)

    # -- the pulsar.Producer surface --------------------------------------------------------

    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return str(self._inner.producer_name())

    def last_sequence_id(self) -> int:
        return int(self._inner.last_sequence_id())

    def is_connected(self) -> bool:
        return bool(self._inner.is_connected())

    def send_async(
        self, content: bytes, callback: SendCallback | None, properties: dict[str, str] | None = None, **options: Any
    ) -> None:
        """As :meth:`pulsar.Producer.send_async`; ``callback(result, message_id)`` fires once."""
        unknown = sorted(set(options) - set(_SEND_OPTIONS))
        if unknown:
            raise TypeError(f"send_async() got unexpected keyword arguments {unknown}")
        props = dict(properties or {})
        if HEADER in props:
            raise ValueError(f"the {HEADER!r} property is set by hotstandby; do not set it yourself")
        key = options.get("partition_key")
        with self._send_lock:
            with self._lock:
                if self._closed:
                    raise pulsar.AlreadyClosed("Producer has been closed")
                partition = self._partitioner.partition(
                    self._topic, key.encode() if isinstance(key, str) else key, self._partitions
                )
                seq = self._sequences.get(partition, 0)
                self._sequences[partition] = seq + 1
                rid = RecordId(self._session, partition, seq)
                props[HEADER] = encode_identity(rid)
                given = {k: v for k, v in options.items() if v is not None}
                message = _Message(bytes(content), props, given, rid, callback)
                self._pending[(partition, seq)] = message
                inner, generation = self._inner, self._generation
            self._send(inner, generation, message)

    def send(self, content: bytes, properties: dict[str, str] | None = None, **options: Any) -> Any:
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
        if result != pulsar.Result.Ok:
            raise pulsar.PulsarException(f"send failed: {result}")
        return message_id

    def flush(self) -> None:
        """Wait until every message sent so far was acknowledged or failed (across switches)."""
        deadline = time.monotonic() + self._wait_s
        with self._lock:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise pulsar.Timeout(f"{len(self._pending)} messages unacknowledged after {self._wait_s:.0f} s")
                inner = self._inner
                self._lock.release()
                try:
                    inner.flush()  # returns early when a switch closes it
                except pulsar.PulsarException:
                    pass  # that connection was given up; the re-sent messages are pending again
                finally:
                    self._lock.acquire()
                if self._pending:
                    self._delivered_cv.wait(min(left, 0.1))

    def close(self) -> None:
        """Flush, then close (the client stops moving this producer)."""
        try:
            self.flush()
        finally:
            with self._lock:
                self._closed = True
                inner = self._inner
            self._client.retire(self, inner)

    def __len__(self) -> int:
        return len(self._pending)

    # -- sending ----------------------------------------------------------------------------

    def _send(self, inner: pulsar.Producer, generation: int, message: _Message) -> None:
        inner.send_async(
            message.content,
            lambda result, message_id: self._acknowledged(message, generation, result, message_id),
            properties=message.properties,
            **message.options,
        )

    def _acknowledged(self, message: _Message, generation: int, result: pulsar.Result, message_id: Any) -> None:
        callback: SendCallback | None = None
        with self._lock:
            if generation != self._generation:
                return  # a connection given up in a switch: the message was sent again
            self._pending.pop((message.rid.partition, message.rid.sequence), None)
            if result == pulsar.Result.Ok:
                self._window.add(message, message.size)
            else:
                log.warning("producer.send_failed", topic=self._topic, result=str(result))
            if not message.reported:
                message.reported = True
                callback = message.callback
            self._delivered_cv.notify_all()
        if callback is not None:
            callback(result, message_id)

    # -- switching (run by the client) -------------------------------------------------------

    def drain(self, old: ClusterSpec) -> None:
        """Planned switch: let the old cluster acknowledge what it has, within the drain timeout."""
        with self._lock:
            if not self._pending:
                return
            inner = self._inner
        timeout = self._client.options.drain_timeout_ms / 1000
        if not probe_cluster(old, timeout=min(1.0, timeout)).ok:
            return
        # pulsar's flush has no timeout: it runs aside, and the switch goes on after the wait.
        flusher = threading.Thread(target=_flush_quietly, args=(inner,), daemon=True, name="hotstandby-drain")
        flusher.start()
        flusher.join(timeout)

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """Make the counterpart on the new cluster; the returned step puts it in place and
        re-sends (run under the client's lock, once every member is prepared)."""
        new = self._create(client)

        def commit() -> None:
            with self._send_lock:
                with self._lock:
                    self._generation += 1
                    self._inner = new
                    replay = {(m.rid.partition, m.rid.sequence): m for m in self._window}
                    replay.update(self._pending)
                    self._window.keep(lambda _: False)  # re-sent: they come back when acknowledged
                    self._pending.update(replay)
                    generation = self._generation
                    self.resent += len(replay)
                for key in sorted(replay):
                    self._send(new, generation, replay[key])
            log.info("producer.switched", topic=self._topic, source=source, to=spec.name, resent=len(replay))

        return commit


def _flush_quietly(producer: pulsar.Producer) -> None:
    try:
        producer.flush()
    except pulsar.PulsarException as exc:
        log.info("producer.drain_flush_failed", error=str(exc))
