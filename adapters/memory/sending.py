"""What the memory producer sends with and what its switch moves: the cluster in use, the
queue handed to it and not sent yet, and the core's
:class:`~hotstandby.failover.outbox.Outbox` (pending records and the replay window)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from hotstandby.adapters.memory.cluster import BrokerUnavailable, MemoryCluster
from hotstandby.adapters.memory.message import Message
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import RecordId
from hotstandby.failover.outbox import Outbox, Stored

__all__ = ["DeliveryCallback", "Record", "Sending"]

DeliveryCallback = Callable[[Exception | None, Message], None]


@dataclass(eq=False)
class Record:
    """One produced record, as the outbox keeps it until replication has copied it."""

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


class Sending:
    """The producer's sending state; ``lock`` guards it (and carries the switch gate)."""

    def __init__(self, lock: threading.RLock, cluster: MemoryCluster, spec: ClusterSpec,
                 outbox: Outbox[tuple[str, int, int], Record], clock: Callable[[], float]) -> None:  # fmt: skip
        self.lock = lock
        self.cluster = cluster
        self.spec = spec
        self.outbox = outbox
        self.queue: list[Record] = []  # handed to the current cluster, not sent yet
        self._clock = clock

    def send_queue(self) -> list[tuple[Record, Message]]:
        """With the lock held: send the queue to the cluster (stops at the first refusal: the
        cluster was killed, the records wait for a switch). Returns the reports to serve."""
        reports = []
        sent = 0
        cluster = self.cluster
        for record in self.queue:
            try:
                offset = cluster.append((record.topic, record.partition), record.key, record.value,
                                        record.headers, record.timestamp)  # fmt: skip
            except BrokerUnavailable:
                break
            sent += 1
            stored = Stored(cluster.name, record.topic, record.partition, offset, int(self._clock() * 1000))
            self.outbox.acknowledged(record.slot, record.size, stored)
            if not record.reported:
                record.reported = True
                msg = Message(record.topic, record.partition, offset, record.key, record.value,
                              record.headers, record.timestamp, cluster.name)  # fmt: skip
                reports.append((record, msg))
        del self.queue[:sent]
        return reports

    @staticmethod
    def serve(reports: list[tuple[Record, Message]]) -> None:
        """Delivery callbacks for ``reports``, without the lock (a callback may produce)."""
        for record, msg in reports:
            if record.on_delivery is not None:
                record.on_delivery(None, msg)
