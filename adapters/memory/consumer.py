"""``hotstandby.adapters.memory.Consumer``: a Kafka-like group consumer on in-memory clusters
that follows a route through the failover core.

As the Kafka facade, with manual commits (``enable.auto.commit`` must be false):

* :meth:`poll` hands out a record unless its identity is in the group's ledger or in flight
  (:class:`~hotstandby.failover.ledger.ack_tracker.AckTracker`); partitions are read only once their
  ledger is claimed (fenced by generation, in the config center).
* :meth:`commit` covers what confluent-kafka's would (``message`` and the records of its
  partition before it, ``offsets``, or the stored offsets), stores the ledger first and
  returns once it is stored — then commits on the broker. A record handed out on a cluster the
  consumer has left is acknowledged by identity.
* A rebalance (a member joins, leaves, or its session expires) is eager: every partition is
  revoked and assigned again, reading restarts at the committed offset.
* A switch (:class:`~hotstandby.adapters.memory.consumer_switch.ConsumerSwitch`): store every
  acknowledgement, leave the old cluster's group, join the new one; each partition starts at
  the group's committed offset there, else the beginning (``translation.choose``); the ledger
  filters what is read again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from hotstandby.adapters.memory.client import Clock, MemoryClient
from hotstandby.adapters.memory.cluster import BrokerUnavailable, CommitRefused, TopicPartition
from hotstandby.adapters.memory.consumer_switch import ConsumerSwitch
from hotstandby.adapters.memory.group_reading import GroupReading
from hotstandby.adapters.memory.message import Message, identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterUnavailable, ConfigError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker, LedgerKey
from hotstandby.failover.ledger.follower import LedgerFollower
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.ownership import Ledgers
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switch_events import ClientCounts
from hotstandby.failover.translation import Proposal, Strategy, choose
from hotstandby.logs import get_logger

__all__ = ["Consumer"]

log = get_logger("hotstandby.memory.consumer")


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1")


# mypy sees adapter modules as Any until the package mapping is typed.
class Consumer(MemoryClient):  # type: ignore[misc,unused-ignore]
    """Kafka-like consumer (``subscribe``/``poll``/``commit``/``store_offsets``)."""

    def __init__(self, config: dict[str, Any], *, center: ConfigCenter | None = None, clock: Clock = time.time) -> None:
        options, raw = ClientOptions.split(config, role="consumer")
        group = raw.get("group.id")
        if not isinstance(group, str) or not group:
            raise ConfigError("group.id is required")
        if _flag(raw.get("enable.auto.commit", True)):
            raise ConfigError("the memory consumer commits only when asked: set enable.auto.commit to false")
        self.group = group
        self._auto_store = _flag(raw.get("enable.auto.offset.store", True))
        self._clock = clock
        spec, cluster = self._setup(options, "consumer", center, labels={"group": group})
        self._reading = reading = GroupReading(self._lock, cluster, spec, group, options.client_id)
        center = self._follower.center
        self._acks = AckTracker()
        self._ledgers = Ledgers(LedgerStore(center), self._acks, group=group, owner=options.client_id)
        self._switch = ConsumerSwitch(reading, self._acks, self._ledgers, self._store, clock)
        # In memory a reconnect costs nothing: the follower need not pause a second after an outage.
        self._ledger_follower = LedgerFollower(
            center, group, self._merge, name=f"ledgers-{options.client_id}", retry_s=0.01
        )
        self._ledger_follower.start()
        self._follow_route(self._switch, lambda: reading.spec, lambda: ClientCounts(filtered=self._acks.filtered))

    @property
    def switches(self) -> int:
        """Switches this consumer took part in (a record's ``visit`` is the count when read)."""
        return self._reading.switches

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _merge(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        with self._lock:
            self._acks.merge((topic, partition), ledger)

    # -- group membership -----------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        with self._lock:
            self._reading.topics = list(topics)
            self._reading.rejoin()

    def _sync_assignment(self) -> None:
        """With the lock held: take a rebalance in (eager: all revoked, all assigned again)."""
        reading = self._reading
        if not reading.topics:
            return
        if reading.member is None:
            reading.rejoin()
            if reading.member is None:
                return
        generation, assigned = reading.cluster.assignment(self.group, reading.member)
        if generation == -1:  # the group is gone (the cluster came back empty): join again
            reading.rejoin()
            return
        if generation != reading.generation:
            old = set(reading.assigned)
            self._acks.forget(old - set(assigned))
            self._ledgers.release({k for k in old})
            reading.generation, reading.assigned = generation, assigned
            reading.positions.clear()
            self._ledgers.claim(set(assigned))
        else:
            self._ledgers.retry_claims(force=True)  # in memory an attempt costs nothing
        for tp in reading.assigned:
            if tp not in reading.positions and tp in self._ledgers.owned:
                reading.positions[tp] = self._start(tp)

    def _start(self, tp: TopicPartition) -> int:
        """Where reading ``tp`` starts on this cluster: the committed offset, else the beginning."""
        committed = self._reading.cluster.committed(self.group, tp)
        chosen = choose([
            Strategy("committed", lambda: Proposal(committed, "committed") if committed is not None else None),
            Strategy("beginning", lambda: Proposal(0, "beginning"), exact=False),
        ])  # fmt: skip
        return chosen.position

    # -- reading --------------------------------------------------------------------------

    def poll(self, timeout: float | None = 0) -> Message | None:
        """The next record to process, or None (nothing within ``timeout``: in memory, nothing now)."""
        with self._lock:
            self._reading.alive()
            if not self._await_gate(timeout if timeout is not None and timeout >= 0 else None):
                return None
            self._ledgers.store(set(), deadline=time.monotonic())  # one attempt at what is unstored
            try:
                self._sync_assignment()
                return self._fetch()
            except BrokerUnavailable:
                return None

    def _fetch(self) -> Message | None:
        reading = self._reading
        readable = [tp for tp in reading.assigned if tp in reading.positions]
        for i in range(len(readable)):
            tp = readable[(reading.turn + i) % len(readable)]
            while True:
                records = reading.cluster.read(tp, reading.positions[tp], 1)
                if not records:
                    break
                record = records[0]
                reading.positions[tp] = record.offset + 1
                rid = identity_of(record.headers)
                if self._acks.offer(tp[0], tp, record.offset, rid, record.timestamp_ms):
                    reading.turn = (reading.turn + i + 1) % len(readable)
                    if self._auto_store:
                        reading.stored[tp] = record.offset + 1
                    return Message(tp[0], tp[1], record.offset, record.key, record.value, record.headers,
                                   record.timestamp_ms, reading.spec.name, reading.switches)  # fmt: skip
        return None

    # -- acknowledging --------------------------------------------------------------------

    def store_offsets(self, message: Message | None = None, offsets: list[tuple[str, int, int]] | None = None) -> None:
        """What :meth:`commit` without arguments commits (offsets: ``(topic, partition, next offset)``)."""
        with self._lock:
            if message is not None:
                self._reading.stored[(message.topic(), message.partition())] = message.offset() + 1
            for topic, partition, offset in offsets or []:
                self._reading.stored[(topic, partition)] = offset

    def commit(
        self,
        message: Message | None = None,
        offsets: list[tuple[str, int, int]] | None = None,
        asynchronous: bool = True,
    ) -> None:
        """Acknowledge as confluent-kafka's commit would; returns once the ledger is stored.
        Raises :class:`~hotstandby.errors.ConfigCenterUnavailable` when it cannot be stored
        within the etcd timeout (the acknowledgements stay local and are stored later)."""
        reading = self._reading
        with self._lock:
            reading.alive()
            now = self._now_ms()
            if message is not None:
                slot = (message.topic(), message.partition())
                rid, ts = message.identity(), message.timestamp()[1]
                if message.visit != reading.switches:
                    # Read on a cluster left since: by identity (with the records of its
                    # partition handed out before it, while the tracker still has them), no
                    # broker commit — its offsets mean nothing here.
                    keys = self._acks.acknowledge_left_behind(slot, message.offset(), rid, ts, now)
                    if keys is None and rid is not None:
                        key = self._acks.acknowledge_identity(slot[0], rid, now)
                        keys = {key} if key is not None else set()
                    self._store(keys or set())
                    return
                through = {slot: message.offset() + 1}
            elif offsets is not None:
                through = {(t, p): o for t, p, o in offsets}
            else:
                through = dict(reading.stored)
            for slot, offset in through.items():
                self._acks.acknowledge_through(slot, offset)
            self._store(self._acks.collect(now))
            if reading.member is not None:
                try:
                    reading.cluster.commit(self.group, reading.member, reading.generation, through)
                except (BrokerUnavailable, CommitRefused) as exc:  # the ledger holds them
                    log.info("consumer.commit_failed", cluster=reading.spec.name, error=str(exc))

    def _store(self, keys: set[LedgerKey]) -> None:
        deadline = time.monotonic() + self.options.settings.etcd_timeout
        if not self._ledgers.store(keys, deadline=deadline):
            raise ConfigCenterUnavailable("the acknowledgements could not be stored in the config center in time")

    def acknowledged(self, topic: str, rid: RecordId) -> bool:
        """Whether this consumer's ledger (its own and what the group stored) holds ``rid``."""
        with self._lock:
            ledger = self._acks.ledgers.get((topic, rid.partition))
            return ledger is not None and ledger.has(rid)

    def ledger(self, topic: str, partition: int) -> PartitionLedger:
        """A copy of what this consumer filters ``topic[partition]`` by (for tests)."""
        with self._lock:
            found = self._acks.ledgers.get((topic, partition))
            return found.copy() if found is not None else PartitionLedger()

    def assignment(self) -> list[TopicPartition]:
        with self._lock:
            return list(self._reading.assigned)

    # -- ending ---------------------------------------------------------------------------

    def close(self) -> None:
        """Store what is unstored (bounded), leave the group, stop following the route."""
        with self._lock:
            if not self._reading.dead:
                self._ledgers.store(set(), deadline=time.monotonic() + self.options.settings.etcd_timeout)
                self._reading.leave()
            self._reading.dead = True
        self._ledger_follower.close()
        self._follower.close()

    def kill(self) -> None:
        """What SIGKILL does to the process (for tests): nothing more is stored or committed,
        the member stays in its group until its session expires; returns at once (the
        client's threads stop in the background)."""
        reading = self._reading
        with self._lock:
            reading.dead = True
            if reading.member is not None:
                reading.cluster.crash(self.group, reading.member)

        def stop() -> None:
            self._ledger_follower.close()
            self._follower.close()

        threading.Thread(target=stop, name="hotstandby-memory-kill", daemon=True).start()
