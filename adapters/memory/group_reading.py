"""Where the memory consumer reads: the cluster in use, its membership of the group there
(member id, generation, assigned partitions) and its positions. A switch replaces all of it
(:class:`~hotstandby.adapters.memory.consumer_switch.ConsumerSwitch`)."""

from __future__ import annotations

import contextlib
import threading

from hotstandby.adapters.memory.cluster import BrokerUnavailable, MemoryCluster, TopicPartition
from hotstandby.configcenter.documents import ClusterSpec

__all__ = ["GroupReading"]


class GroupReading:
    """The consumer's reading state; ``lock`` guards it (and carries the switch gate)."""

    def __init__(self, lock: threading.RLock, cluster: MemoryCluster, spec: ClusterSpec, group: str,
                 client_id: str) -> None:  # fmt: skip
        self.lock = lock
        self.cluster = cluster
        self.spec = spec
        self.group = group
        self.client_id = client_id
        self.topics: list[str] = []
        self.member: str | None = None
        self.generation = -1
        self.assigned: list[TopicPartition] = []
        self.positions: dict[TopicPartition, int] = {}
        self.stored: dict[TopicPartition, int] = {}  # what commit() without arguments commits
        self.turn = 0  # the partition the next fetch starts at (round robin)
        self.dead = False
        self.switches = 0  # a record's visit: the switches before it was read

    def alive(self) -> None:
        """Raise when the consumer was killed or closed."""
        if self.dead:
            raise RuntimeError("Consumer was killed")

    def rejoin(self) -> None:
        """Join the group on the cluster in use (no member when it does not answer)."""
        try:
            self.member = self.cluster.join(self.group, self.topics, self.client_id)
        except BrokerUnavailable:
            self.member = None

    def leave(self) -> None:
        """Leave the group on the cluster in use (a dead cluster's group is gone with it)."""
        if self.member is not None:
            with contextlib.suppress(BrokerUnavailable):
                self.cluster.leave(self.group, self.member)

    def move_to(self, cluster: MemoryCluster, spec: ClusterSpec) -> None:
        """With the lock held: leave the group here, start over on ``cluster``."""
        self.leave()
        self.cluster, self.spec = cluster, spec
        self.member, self.generation, self.assigned = None, -1, []
        self.positions.clear()
        self.stored.clear()
        self.switches += 1
        if self.topics:
            self.rejoin()
