"""The failover simulation's world and application, shared by the stateful property test and
its kept regression schedules: one producer and two consumers of one group (the real core on
the in-memory adapter), and the bookkeeping that says what was lost or delivered twice.

* *lost*: the producer got a delivery report, and after the schedule (etcd back, dead members
  expired, replication caught up, everything polled and committed) no consumer ever handed the record out;
* *duplicated*: a record handed out after the application's commit covering it returned.

A commit covers what confluent-kafka's would for this consumer: the message and the records
of its partition this consumer handed out before it during the same stay on a cluster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hotstandby.adapters.memory.consumer import Consumer
from hotstandby.adapters.memory.message import Message
from hotstandby.adapters.memory.producer import Producer
from hotstandby.adapters.memory.world import World
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore

TOPIC, GROUP, ROUTE, PARTITIONS = "t", "g", "r", 2
CLUSTERS = ("mem-a", "mem-b")
OPTIONS = {
    "hotstandby.route": ROUTE,
    "hotstandby.etcd.timeout.ms": 20,  # etcd calls fail at once while the store is down
    # No drain in memory; the peer wait is not needed either: a schedule's next step comes
    # after every client switched.
    "hotstandby.drain.timeout.ms": 0,
    "hotstandby.timestamp.skew.ms": 0,  # the world's clock is exact
}
SWITCH_TIMEOUT_S = 5.0


class Violation(AssertionError):
    pass


def _covers(mine: PartitionLedger, stored: PartitionLedger) -> bool:
    """Whether ``mine`` holds everything ``stored`` does."""
    merged = mine.copy()
    merged.merge(stored)
    return all(merged.ranges(s) == mine.ranges(s) for s in merged.sessions)


@dataclass
class App:
    """One consumer and what its application holds (handed out, not committed)."""

    consumer: Consumer
    held: list[Message] = field(default_factory=list)
    dead: bool = False  # killed while etcd was down: its successor starts when etcd is back


class Simulation:
    def __init__(self) -> None:
        self.world = World(CLUSTERS)
        self.world.create_topic(TOPIC, PARTITIONS)
        self.world.create_route(ROUTE, CLUSTERS[0])
        self.active, self.dead = CLUSTERS[0], ""
        self.seeding = ""  # came back empty, replication has not caught up yet
        self._merged: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # see await_followers
        self.etcd_down = False
        self.produced = 0
        self.reported: set[RecordId] = set()  # delivery reports: the cluster acknowledged them
        self.delivered: set[RecordId] = set()
        self.acked: set[RecordId] = set()  # covered by a commit that returned
        self.producer = Producer(
            {**OPTIONS, "on_delivery": self._report}, center=self.world.center, clock=self.world.clock.monotonic
        )
        self.started = 0  # consumers started: their client ids (sorted as Kafka's member ids)
        self.apps = [App(self._consumer()), App(self._consumer())]

    def _report(self, err: Exception | None, msg: Message) -> None:
        rid = msg.identity() if err is None else None
        if rid is not None:
            self.reported.add(rid)

    def _consumer(self) -> Consumer:
        self.started += 1
        config = {
            **OPTIONS,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "hotstandby.client.id": f"c{self.started:03}",
        }
        consumer = Consumer(config, center=self.world.center)
        consumer.subscribe([TOPIC])
        return consumer

    @property
    def standby(self) -> str:
        return CLUSTERS[1] if self.active == CLUSTERS[0] else CLUSTERS[0]

    # -- steps ----------------------------------------------------------------------------

    def produce(self, count: int) -> None:
        for _ in range(count):
            self.producer.produce(TOPIC, value=f"v{self.produced}", key=f"k{self.produced % 5}")
            self.produced += 1

    def producer_poll(self) -> None:
        self.producer.poll(0)

    def replicate(self, n: int) -> None:
        self.world.replicate(n)

    def tick(self, ms: int) -> None:
        self.world.tick(ms)

    def consume(self, i: int, count: int) -> None:
        app = self.apps[i]
        if app.dead:
            return
        for _ in range(count):
            msg = app.consumer.poll(0)
            if msg is None:
                return
            rid = msg.identity()
            assert rid is not None
            if rid in self.acked:
                raise Violation(f"duplicated: {rid} handed out again by consumer {i} after a commit covered it")
            self.delivered.add(rid)
            app.held.append(msg)

    def commit(self, i: int, pick: int) -> None:
        """Commit one held message (any of them: out of order); a commit that raises covers nothing."""
        app = self.apps[i]
        if app.dead or not app.held:
            return
        msg = app.held[pick % len(app.held)]
        try:
            app.consumer.commit(message=msg, asynchronous=False)
        except ConfigCenterUnavailable:
            return
        slot = (msg.topic(), msg.partition())
        covered = [
            m for m in app.held
            if m is msg or (m.visit == msg.visit and (m.topic(), m.partition()) == slot and m.offset() < msg.offset()
                            and msg.visit >= app.consumer.switches - 1)
        ]  # fmt: skip
        app.held = [m for m in app.held if not any(m is c for c in covered)]
        rids = {rid for m in covered if (rid := m.identity()) is not None}
        self.acked |= rids

    def await_followers(self, timeout: float = 3.0) -> None:
        """The group's members learn stored acknowledgements within milliseconds (the ledger
        follower): each step of a schedule comes after that, so that a schedule does the same
        whenever it runs."""
        if self.etcd_down:
            return
        store = LedgerStore(self.world.center)
        keys = [store.key(GROUP, TOPIC, p) for p in range(PARTITIONS)]
        seen = (tuple(kv.mod_revision if kv else 0 for kv in map(self.world.store.get, keys)),
                tuple(id(a.consumer) for a in self.apps))  # fmt: skip
        if seen == self._merged:
            return  # nothing stored and no new member since the last check
        stored = [store.load(GROUP, TOPIC, p) for p in range(PARTITIONS)]
        deadline = time.monotonic() + timeout
        for app in self.apps:
            if app.dead:
                continue
            for p, doc in enumerate(stored):
                while not _covers(app.consumer.ledger(TOPIC, p), doc.ledger):
                    if time.monotonic() > deadline:
                        raise Violation(f"{app.consumer.options.client_id} did not merge the stored ledger of {p}")
                    time.sleep(0.0002)
        self._merged = seen

    def drop(self, i: int, pick: int) -> None:
        """The application gives a record up without committing it (Kafka's negative ack)."""
        held = self.apps[i].held
        if held:
            held.pop(pick % len(held))

    def flip(self, to: str = "") -> None:
        """The route moves (to the standby unless ``to`` says); every client switches before
        the schedule goes on."""
        to = to or self.standby
        route = self.world.flip(ROUTE, to)
        self.active = to
        for client in (self.producer, *(a.consumer for a in self.apps if not a.dead)):
            if not client.wait_for_route(route.epoch, SWITCH_TIMEOUT_S):
                raise Violation(f"{client.options.client_id} did not switch to {to} within {SWITCH_TIMEOUT_S} s")

    def kill_active(self) -> None:
        self.world.kill(self.active)
        self.dead = self.active
        self.flip(self.standby)

    def kill_standby(self) -> None:
        self.dead = self.standby
        self.world.kill(self.dead)

    def restart_dead(self) -> None:
        self.world.restart(self.dead)
        self.seeding, self.dead = self.dead, ""

    def may_lose_a_cluster(self) -> bool:
        """The fault model: one cluster lost at a time — none while another is dead, or came
        back empty and replication has not copied to it yet what the other holds (losing the
        other then would be a double failure: records the producer let go of once they were
        replicated would be on neither cluster)."""
        if self.dead:
            return False
        if self.seeding and self.world.backlog(self.seeding) == 0:
            self.seeding = ""
        return not self.seeding

    def restart_consumer(self, i: int) -> None:
        """SIGKILL, then a new process joins the group at once (the dead member holds its
        partitions until its session expires): issue 18's schedule. While etcd is down the
        new process starts when etcd is back."""
        self.apps[i].consumer.kill()
        if self.etcd_down:  # a new process cannot start before etcd answers
            self.apps[i] = App(self.apps[i].consumer, dead=True)
        else:
            self.apps[i] = App(self._consumer())

    def expire_sessions(self) -> None:
        for cluster in self.world.clusters.values():
            cluster.expire()

    def etcd_outage(self) -> None:
        self.world.store.disconnect()
        self.etcd_down = True

    def etcd_back(self) -> None:
        self.world.store.reconnect()
        self.etcd_down = False
        for i, app in enumerate(self.apps):
            if app.dead:
                self.apps[i] = App(self._consumer())

    # -- the end --------------------------------------------------------------------------

    def settle_and_check(self, timeout: float = 10.0) -> None:
        """Heal (etcd back, dead members expired, replication caught up), send and read
        everything; nothing lost."""
        if self.etcd_down:
            self.etcd_back()
        self.expire_sessions()
        deadline = time.monotonic() + timeout
        quiet = 0  # rounds in a row in which nothing moved
        while quiet < 2 and time.monotonic() < deadline:
            before = len(self.delivered)
            self.producer.poll(0)
            copied = self.world.replicate()  # replication catches up between clusters that answer
            for i in range(len(self.apps)):
                self.consume(i, 1000)
                while self.apps[i].held:
                    self.commit(i, len(self.apps[i].held) - 1)
                # As between the steps: the other members learn the stored ledgers before they
                # read on (a record of a cluster left, committed by a member that no longer
                # owns its partition, is known to the owner once its ledger follower merged it).
                self.await_followers()
            moved = copied or len(self.delivered) > before or len(self.producer) > 0
            quiet = 0 if moved else quiet + 1
        lost = self.reported - self.delivered
        if lost:
            raise Violation(f"lost {len(lost)} of {len(self.reported)} acknowledged records, e.g. {sorted(lost)[:3]}")

    def close(self) -> None:
        self.world.store.disconnect()  # wakes every watch: the clients' threads stop at once
        for app in self.apps:
            app.consumer.close()
        self.producer.close(0)
        self.world.close()
