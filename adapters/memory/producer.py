"""``hotstandby.adapters.memory.Producer``: a Kafka-like producer on in-memory clusters that
follows a route through the failover core.

As the Kafka facade: every record gets an ``hs-id`` header and an SDK-chosen partition;
:meth:`produce` queues it (*pending*); :meth:`poll` / :meth:`flush` send the queue to the
cluster and serve delivery callbacks (once per record). An acknowledged record moves to the
replay window. A switch (the core's protocol: :class:`SwitchParticipant`) sends what the old
cluster still answers for, then re-sends to the new cluster — same identity and partition, in
order — every pending record and every window record replication has not provably copied
there (:func:`~hotstandby.adapters.memory.world.progress_of`).

What is pending, the replay window and what a switch sends again are the core's
:class:`~hotstandby.failover.outbox.Outbox`, trimmed by the replication positions kept on the
new cluster (:func:`~hotstandby.adapters.memory.world.progress_of`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hotstandby.adapters.memory.client import Clock, MemoryClient, connect
from hotstandby.adapters.memory.cluster import BrokerUnavailable, MemoryCluster
from hotstandby.adapters.memory.message import Message
from hotstandby.adapters.memory.world import progress_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import wait_slices
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.failover.outbox import Outbox, ReplicatedTo, Stored
from hotstandby.failover.partitioner import Partitioner
from hotstandby.failover.switch_events import ClientCounts
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["Producer"]

log = get_logger("hotstandby.memory.producer")

DeliveryCallback = Callable[[Exception | None, Message], None]


@dataclass(eq=False)
class _Record:
    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    rid: RecordId
    on_delivery: DeliveryCallback | None
    size: int
    reported: bool = False

    @property
    def slot(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.rid.sequence)


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"expected bytes or str, got {type(value).__name__}")


# mypy sees adapter modules as Any until the package mapping is typed.
class Producer(MemoryClient):  # type: ignore[misc,unused-ignore]
    """Kafka-like producer (``produce``/``poll``/``flush``) on in-memory clusters."""

    def __init__(
        self, config: dict[str, Any], *, center: ConfigCenter | None = None, clock: Clock = time.monotonic
    ) -> None:
        self.options, raw = ClientOptions.split(config, role="producer")
        self._on_delivery: DeliveryCallback | None = raw.get("on_delivery")
        self._clock = clock
        self._inner: MemoryCluster = self._setup(self.options, "producer", center)
        self.peer_labels = None
        self._session = new_session()
        self._sequences: dict[tuple[str, int], int] = {}
        self._outbox: Outbox[tuple[str, int, int], _Record] = Outbox(
            self.options.replay_window_ms, self.options.replay_window_bytes, clock=clock
        )
        self._queue: list[_Record] = []  # handed to the current cluster, not sent yet
        self._partitioner = Partitioner(self.options.partitioner or "murmur2")
        self._partition_counts: dict[str, int] = {}
        self._next: MemoryCluster | None = None  # built by connect(), used by move()
        self._copied: dict[tuple[str, int], ReplicatedTo] = {}
        self.resent = 0
        self.trimmed = 0
        self._follow_route(self, lambda: ClientCounts(resent=self.resent))

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
    ) -> None:
        """Queue one record (as confluent_kafka's ``produce``); waits while a switch runs."""
        key_b, value_b = _as_bytes(key), _as_bytes(value)
        extra = tuple((str(k), _as_bytes(v) or b"") for k, v in (headers or []))
        if any(k == HEADER for k, _ in extra):
            raise ValueError(f"the {HEADER!r} header is set by hotstandby; do not set it yourself")
        with self._lock:
            self._await_gate(None)
            if partition < 0:
                count = self._partition_counts.get(topic)
                if count is None:
                    count = self._partition_counts[topic] = self._inner.partitions(topic)
                partition = self._partitioner.partition(topic, key_b, count)
            seq = self._sequences.get((topic, partition), 0)
            self._sequences[(topic, partition)] = seq + 1
            rid = RecordId(self._session, partition, seq)
            record = _Record(
                topic, partition, key_b, value_b, (*extra, (HEADER, rid.encode())),
                timestamp or int(self._clock() * 1000), rid, on_delivery or self._on_delivery,
                len(key_b or b"") + len(value_b or b""),
            )  # fmt: skip
            self._outbox.add(record.slot, record)
            self._queue.append(record)

    def _send_queue(self) -> list[tuple[_Record, Message]]:
        """With the lock held: send the queue to the cluster (stops at the first refusal: the
        cluster was killed, the records wait for a switch). Returns the reports to serve."""
        reports = []
        sent = 0
        cluster = self._inner
        for record in self._queue:
            try:
                offset = cluster.append((record.topic, record.partition), record.key, record.value,
                                        record.headers, record.timestamp)  # fmt: skip
            except BrokerUnavailable:
                break
            sent += 1
            stored = Stored(cluster.name, record.topic, record.partition, offset, int(self._clock() * 1000))
            self._outbox.acknowledged(record.slot, record.size, stored)
            if not record.reported:
                record.reported = True
                msg = Message(record.topic, record.partition, offset, record.key, record.value,
                              record.headers, record.timestamp, cluster.name)  # fmt: skip
                reports.append((record, msg))
        del self._queue[:sent]
        return reports

    def poll(self, timeout: float | None = 0) -> int:
        """Send what is queued and serve delivery callbacks; how many were served."""
        with self._lock:
            if not self._await_gate(timeout if timeout is not None and timeout >= 0 else None):
                return 0
            reports = self._send_queue()
        for record, msg in reports:
            if record.on_delivery is not None:
                record.on_delivery(None, msg)
        return len(reports)

    def flush(self, timeout: float | None = -1) -> int:
        """Send everything, across switches (up to ``timeout`` s); how many records are left."""
        for wait in wait_slices(timeout):
            self.poll(0)
            with self._lock:
                if not self._outbox.pending:
                    return 0
            time.sleep(min(wait, 0.01))
        return len(self)

    def __len__(self) -> int:
        with self._lock:
            return self._outbox.pending

    def close(self, timeout: float = 10.0) -> int:
        """Flush, stop following the route; returns records still unacknowledged."""
        left = self.flush(timeout)
        self._follower.close()
        return left

    # -- the switch protocol --------------------------------------------------------------

    def drain(self, plan: SwitchPlan) -> None:
        """Planned switch: the old cluster takes what is queued, if it answers."""
        with self._lock:
            reports = self._send_queue()
        for record, msg in reports:
            if record.on_delivery is not None:
                record.on_delivery(None, msg)

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to store: a producer's state moves with it."""

    def connect(self, plan: SwitchPlan) -> None:
        self._next = connect(plan.destination)
        self._copied = progress_of(self._next, plan.source.name)

    def move(self, plan: SwitchPlan) -> None:
        with self._lock:
            self._move(plan)

    def _move(self, plan: SwitchPlan) -> None:
        assert self._next is not None
        source = plan.source.name
        replay = self._outbox.replay(source, self._copied, self.options.timestamp_skew_ms)
        self._inner, self._spec, self._next = self._next, plan.destination, None
        self._queue = replay.records
        self.resent += len(replay.records)
        self.trimmed += replay.trimmed
        log.info("producer.switched", client=self.options.client_id, source=source, to=plan.destination.name,
                 epoch=plan.target.epoch, resent=len(replay.records), replicated=replay.trimmed)  # fmt: skip

    def resume(self, plan: SwitchPlan) -> None:
        """The re-send goes out with the next ``poll``/``flush``, ahead of newer records."""

    def abort(self, plan: SwitchPlan) -> None:
        self._next = None
