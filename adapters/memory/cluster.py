"""An in-memory messaging cluster: topics of partitions (offsets from 0), record headers,
consumer groups with committed offsets and a range assignment, and a kill.

It behaves as a Kafka broker does where the failover core can tell: an append returns the
record's offset; a consumer group hands each partition to one member, and every change of
membership starts a new generation (a rebalance); a commit from a member of an older
generation is refused; a member that dies without leaving keeps its partitions until its
session expires (:meth:`MemoryCluster.expire`). A killed cluster refuses everything
(:class:`BrokerUnavailable`); :meth:`MemoryCluster.restart` brings it back *empty*, as a broker
that lost its disk: same topics, no records, no groups, offsets from 0 again.

Thread-safe (one lock per cluster); time comes from the :class:`Clock` passed in.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hotstandby.errors import HotStandbyError

__all__ = ["BrokerUnavailable", "Clock", "CommitRefused", "MemoryCluster", "StoredRecord", "TopicPartition"]

TopicPartition = tuple[str, int]
Headers = tuple[tuple[str, bytes], ...]


class BrokerUnavailable(HotStandbyError, ConnectionError):
    """The cluster was killed (Kafka's ``_TRANSPORT`` / ``_ALL_BROKERS_DOWN``)."""


class CommitRefused(HotStandbyError):
    """A commit from a member of an older generation (Kafka's ``ILLEGAL_GENERATION``)."""


class Clock:
    """Time the test controls: starts at ``start_ms`` (default: the wall clock now, so ledger
    timestamps stay comparable with the ledger store's) and moves only by :meth:`advance`."""

    def __init__(self, start_ms: int | None = None) -> None:
        self._ms = int(time.time() * 1000) if start_ms is None else start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._ms

    def monotonic(self) -> float:
        """Seconds, for the core's ``clock`` parameters."""
        return self.now_ms() / 1000

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms


@dataclass(frozen=True, slots=True)
class StoredRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp_ms: int  # the producer's timestamp (replication keeps it)
    appended_ms: int  # when this cluster stored it (replication lag is measured from it)
    # The cluster incarnations the record was stored on, its own included: replication does
    # not copy it back to one of them.
    path: frozenset[tuple[str, int]]


@dataclass
class _Member:
    topics: tuple[str, ...]
    alive: bool = True


@dataclass
class _Group:
    generation: int = 0
    members: dict[str, _Member] = field(default_factory=dict)
    assignment: dict[str, list[TopicPartition]] = field(default_factory=dict)
    committed: dict[TopicPartition, int] = field(default_factory=dict)


class MemoryCluster:
    """One cluster; ``address`` is what its cluster document names (``bootstrap.servers``)."""

    def __init__(self, name: str, address: str, clock: Clock) -> None:
        self.name = name
        self.address = address
        self.clock = clock
        self.incarnation = 1
        self.alive = True
        self._lock = threading.RLock()
        self._partitions: dict[str, int] = {}
        self._logs: dict[TopicPartition, list[StoredRecord]] = {}
        self._groups: dict[str, _Group] = {}
        self._members = itertools.count(1)

    # -- life -----------------------------------------------------------------------------

    def _check(self) -> None:
        if not self.alive:
            raise BrokerUnavailable(f"cluster {self.name} ({self.address}) does not answer")

    def kill(self) -> None:
        """The cluster stops answering; what it held is gone for good."""
        with self._lock:
            self.alive = False

    def restart(self) -> None:
        """Back, empty: the same topics with no records; no groups, no committed offsets."""
        with self._lock:
            self.alive = True
            self.incarnation += 1
            self._logs = {tp: [] for tp in self._logs}
            self._groups.clear()

    # -- topics and records ---------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int) -> None:
        with self._lock:
            self._partitions[topic] = partitions
            for p in range(partitions):
                self._logs.setdefault((topic, p), [])

    def partitions(self, topic: str) -> int:
        with self._lock:
            self._check()
            if topic not in self._partitions:
                raise KeyError(f"{self.name}: unknown topic {topic!r}")
            return self._partitions[topic]

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._partitions)

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        timestamp_ms: int,
        path: frozenset[tuple[str, int]] = frozenset(),
    ) -> int:
        """Store one record at the end of ``tp``; its offset."""
        with self._lock:
            self._check()
            log = self._logs[tp]
            here = (self.name, self.incarnation)
            record = StoredRecord(len(log), key, value, headers, timestamp_ms, self.clock.now_ms(), path | {here})
            log.append(record)
            return record.offset

    def read(self, tp: TopicPartition, offset: int, max_records: int) -> list[StoredRecord]:
        with self._lock:
            self._check()
            return self._logs[tp][offset : offset + max_records]

    def end_offset(self, tp: TopicPartition) -> int:
        with self._lock:
            self._check()
            return len(self._logs[tp])

    def records(self, tp: TopicPartition) -> Sequence[StoredRecord]:
        """Everything ``tp`` holds (for replication and tests; no liveness check)."""
        with self._lock:
            return list(self._logs.get(tp, ()))

    # -- consumer groups ------------------------------------------------------------------

    def join(self, group: str, topics: Iterable[str], client_id: str = "") -> str:
        """A new member; a rebalance follows. Returns the member id (``client_id`` and a number,
        as Kafka's member ids start with the client id)."""
        with self._lock:
            self._check()
            member = f"{client_id or group}-{next(self._members)}"
            g = self._groups.setdefault(group, _Group())
            g.members[member] = _Member(tuple(topics))
            self._rebalance(g)
            return member

    def leave(self, group: str, member: str) -> None:
        with self._lock:
            self._check()
            g = self._groups.get(group)
            if g is not None and g.members.pop(member, None) is not None:
                self._rebalance(g)

    def crash(self, group: str, member: str) -> None:
        """The member's process died: it stays in the group (holding its partitions, reading
        nothing) until :meth:`expire`."""
        with self._lock:
            g = self._groups.get(group)
            if g is not None and member in g.members:
                g.members[member].alive = False

    def expire(self) -> int:
        """Sessions of dead members time out: they leave their groups. How many left."""
        with self._lock:
            gone = 0
            for g in self._groups.values():
                dead = [m for m, s in g.members.items() if not s.alive]
                for m in dead:
                    del g.members[m]
                if dead:
                    gone += len(dead)
                    self._rebalance(g)
            return gone

    def _rebalance(self, g: _Group) -> None:
        # Range assignment per topic over the members subscribed to it, sorted by member id
        # (as Kafka's RangeAssignor): who gets what does not depend on who joined first.
        g.generation += 1
        g.assignment = {m: [] for m in g.members}
        for topic in sorted({t for s in g.members.values() for t in s.topics}):
            members = sorted(m for m, s in g.members.items() if topic in s.topics)
            count = self._partitions.get(topic, 0)
            for p in range(count):
                g.assignment[members[p * len(members) // count]].append((topic, p))

    def assignment(self, group: str, member: str) -> tuple[int, list[TopicPartition]]:
        """``(generation, partitions)`` of ``member``; generation -1 when it is not in the group."""
        with self._lock:
            self._check()
            g = self._groups.get(group)
            if g is None or member not in g.members:
                return -1, []
            return g.generation, list(g.assignment.get(member, []))

    def commit(self, group: str, member: str, generation: int, offsets: dict[TopicPartition, int]) -> None:
        with self._lock:
            self._check()
            g = self._groups.get(group)
            if g is None or member not in g.members or g.generation != generation:
                raise CommitRefused(f"{self.name}: {member} is not in generation {generation} of group {group}")
            for tp, offset in offsets.items():
                g.committed[tp] = offset

    def committed(self, group: str, tp: TopicPartition) -> int | None:
        with self._lock:
            self._check()
            g = self._groups.get(group)
            return g.committed.get(tp) if g is not None else None
