"""A set of in-memory clusters replicating to each other, a config center over a
:class:`~hotstandby.configcenter.memory.MemoryStore`, and one clock: what a test or the
failover simulation drives step by step.

Replication is asynchronous and runs only when the test says: :meth:`World.replicate` copies
up to ``n`` records per link, :meth:`World.tick` moves the clock and (with ``lag_ms``) copies
what has waited that long. Topic names are the same on every cluster (MirrorMaker 2's
``IdentityReplicationPolicy``); a record is not copied back to a cluster incarnation it was
stored on, and a cluster that came back empty gets everything its peers hold copied to it
again (the link's position lived on that cluster and is gone with it).

Replication progress is kept where MirrorMaker 2 keeps it — on the target, per source
partition, the last upstream offset copied and when that was written (MM2's
``mm2-offsets.<source>.internal``): :meth:`MemoryCluster.progress` via :func:`progress_of`.
A producer trims its replay window with it, by the core's rule
(:func:`hotstandby.failover.outbox.replicated`).
No offset syncs or checkpoints are written: with the same topic names on both sides and
records written to both (before and after a flip), a position translated from the other
cluster could skip records of this one; a consumer starts at its group's committed offset on
the cluster or at the beginning, and the ledger filters what it reads again.
"""

from __future__ import annotations

import itertools
import threading

from hotstandby.adapters.memory.cluster import Clock, MemoryCluster, TopicPartition
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.configcenter.memory import MemoryStore
from hotstandby.failover.outbox import ReplicatedTo

__all__ = ["World", "lookup", "progress_of"]

_NETWORK: dict[str, MemoryCluster] = {}  # address -> cluster, for the probe and the clients
_NETWORK_LOCK = threading.Lock()
_WORLDS = itertools.count(1)


def lookup(address: str) -> MemoryCluster:
    """The cluster at ``address`` (``host:port`` of its cluster document); LookupError if none."""
    with _NETWORK_LOCK:
        found = _NETWORK.get(address)
    if found is None:
        raise LookupError(f"no in-memory cluster at {address}")
    return found


# target address -> (target incarnation, {source name -> {tp -> ReplicatedTo}})
_PROGRESS: dict[str, tuple[int, dict[str, dict[TopicPartition, ReplicatedTo]]]] = {}


def progress_of(target: MemoryCluster, source: str) -> dict[TopicPartition, ReplicatedTo]:
    """Replication positions of ``source`` -> ``target``, read on ``target`` (empty when it
    keeps none, e.g. it came back empty since)."""
    with _NETWORK_LOCK:
        incarnation, by_source = _PROGRESS.get(target.address, (0, {}))
        if incarnation != target.incarnation:
            return {}
        return dict(by_source.get(source, {}))


def _record_progress(target: MemoryCluster, source: str, tp: TopicPartition, offset: int) -> None:
    with _NETWORK_LOCK:
        incarnation, by_source = _PROGRESS.get(target.address, (0, {}))
        if incarnation != target.incarnation:
            by_source = {}
            _PROGRESS[target.address] = (target.incarnation, by_source)
        by_source.setdefault(source, {})[tp] = ReplicatedTo(offset, target.clock.now_ms())


class _Link:
    """source -> target: per partition, the next source offset to look at."""

    def __init__(self, source: MemoryCluster, target: MemoryCluster) -> None:
        self.source, self.target = source, target
        self._cursor: dict[TopicPartition, int] = {}
        self._epoch = (0, 0)  # (source, target) incarnations the cursor belongs to

    def backlog(self) -> int:
        """Records the target still lacks (0 when either side is down: nothing can be copied)."""
        source, target = self.source, self.target
        if not (source.alive and target.alive):
            return 0
        here = (target.name, target.incarnation)
        fresh = self._epoch != (source.incarnation, target.incarnation)
        return sum(
            1
            for topic in source.topics()
            for p in range(source.partitions(topic))
            for record in source.records((topic, p))[0 if fresh else self._cursor.get((topic, p), 0) :]
            if here not in record.path
        )

    def copy(self, limit: int | None, appended_before_ms: int | None) -> int:
        """Copy up to ``limit`` records (None: all) stored before ``appended_before_ms``."""
        source, target = self.source, self.target
        if not (source.alive and target.alive):
            return 0
        if self._epoch != (source.incarnation, target.incarnation):
            self._cursor.clear()  # either side came back empty: start over
            self._epoch = (source.incarnation, target.incarnation)
        copied = 0
        here = (target.name, target.incarnation)
        for topic in source.topics():
            for p in range(source.partitions(topic)):
                tp = (topic, p)
                start = self._cursor.get(tp, 0)
                for record in source.records(tp)[start:]:
                    if limit is not None and copied >= limit:
                        return copied
                    if appended_before_ms is not None and record.appended_ms > appended_before_ms:
                        break
                    if here not in record.path:
                        target.append(tp, record.key, record.value, record.headers, record.timestamp_ms, record.path)
                        copied += 1
                    self._cursor[tp] = record.offset + 1
                    _record_progress(target, source.name, tp, record.offset)
        return copied


class World:
    """Clusters (``names``), all-pairs replication links, a config center and a clock."""

    def __init__(
        self,
        names: tuple[str, ...] = ("mem-a", "mem-b"),
        *,
        clock: Clock | None = None,
        lag_ms: int | None = None,
        store: MemoryStore | None = None,
        namespace: str = "/hotstandby",
    ) -> None:
        self.clock = clock or Clock()
        self.lag_ms = lag_ms
        self.store = store or MemoryStore()
        self.center = ConfigCenter(self.store, namespace)
        number = next(_WORLDS)
        self.clusters: dict[str, MemoryCluster] = {}
        for name in names:
            address = f"memory{number}-{name}:9092"
            cluster = self.clusters[name] = MemoryCluster(name, address, self.clock)
            with _NETWORK_LOCK:
                _NETWORK[address] = cluster
            self.center.put_cluster(ClusterSpec(name=name, kind="memory", url=address))
        self._links = [_Link(s, t) for s in self.clusters.values() for t in self.clusters.values() if s is not t]

    def create_topic(self, topic: str, partitions: int) -> None:
        for cluster in self.clusters.values():
            cluster.create_topic(topic, partitions)

    def create_route(self, name: str, active: str) -> Route:
        return self.center.create_route(name, list(self.clusters), active)

    def flip(self, route: str, to: str) -> Route:
        """What an SRE does: the route's active cluster becomes ``to``."""
        return self.center.switch(route, to, reason="test", by="world")

    def replicate(self, n: int | None = None) -> int:
        """Copy up to ``n`` records per link (None: everything); how many were copied."""
        return sum(link.copy(n, None) for link in self._links)

    def backlog(self, target: str) -> int:
        """Records replication has still to copy to ``target`` from the clusters that answer."""
        return sum(link.backlog() for link in self._links if link.target.name == target)

    def tick(self, ms: int = 1) -> int:
        """Move the clock; with ``lag_ms``, copy what was stored at least that long ago."""
        self.clock.advance(ms)
        if self.lag_ms is None:
            return 0
        horizon = self.clock.now_ms() - self.lag_ms
        return sum(link.copy(None, horizon) for link in self._links)

    def kill(self, name: str) -> None:
        self.clusters[name].kill()

    def restart(self, name: str) -> None:
        self.clusters[name].restart()

    def close(self) -> None:
        """Take the clusters off the network (their addresses stop answering)."""
        with _NETWORK_LOCK:
            for cluster in self.clusters.values():
                _NETWORK.pop(cluster.address, None)
                _PROGRESS.pop(cluster.address, None)

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
