"""The Kafka Consumer runs on the config center, ledger store and clock it is given: no etcd
(its endpoint here answers nothing) and no broker (its cluster's port is closed)."""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Message

from hotstandby.adapters.kafka import Consumer
from hotstandby.adapters.kafka.consumer.switch import ConsumerSwitch
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.presence import list_clients
from hotstandby.failover.switch_protocol import SwitchParticipant, SwitchPlan
from tests.support import wait_for

CLOCK_S = time.time() - 3600.0  # an hour ago: not what the consumer would read itself


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


class ClosableStore(MemoryStore):
    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


class RecordingStore(LedgerStore):
    def __init__(self, center: ConfigCenter) -> None:
        super().__init__(center)
        self.saved: list[tuple[str, str, int]] = []

    def save_all(self, group: str, ledgers: Mapping[tuple[str, int], tuple[PartitionLedger, int]],
                 **kw: Any) -> dict[tuple[str, int], int]:  # fmt: skip
        self.saved.extend((group, topic, partition) for topic, partition in sorted(ledgers))
        return super().save_all(group, ledgers, **kw)


def test_a_consumer_uses_the_center_ledger_store_and_clock_passed_in() -> None:
    kv = ClosableStore()
    center = ConfigCenter(kv)
    center.put_cluster(ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["kafka-a"], "kafka-a")
    store = RecordingStore(center)
    config = {
        "group.id": "g",
        "hotstandby.route": "r",
        "hotstandby.etcd": f"127.0.0.1:{_closed_port()}",  # nothing answers there
        "hotstandby.etcd.timeout.ms": 500,
        "hotstandby.client.id": "c1",
    }
    consumer = Consumer(config, center=center, ledger_store=store, clock=lambda: CLOCK_S)
    try:
        assert consumer.cluster == "kafka-a"
        assert isinstance(consumer._switch, ConsumerSwitch) and isinstance(consumer._switch, SwitchParticipant)
        [me] = wait_for(lambda: list_clients(center, "r"), 5.0, "the consumer's presence in the given center")
        assert (me["client"], me["group"]) == ("c1", "g")
        # A record the consumer never handed out (read before a switch) is acknowledged by its
        # identity: into the ledger (with the given clock's time), stored through the given store.
        rid = RecordId(bytes(range(16)), 3, 41)
        message = Message(topic="orders", partition=3, offset=7, headers=[(HEADER, rid.encode())], timestamp=(1, 5))
        assert consumer.commit(message=message, asynchronous=False) is None
        assert store.saved == [("g", "orders", 3)]
        stored = LedgerStore(center).load("g", "orders", 3).ledger
        assert stored.has(rid)
        assert stored.sessions_json()[rid.session.hex()]["last_ack_ms"] == int(CLOCK_S * 1000)
    finally:
        consumer.close()
    assert not kv.closed, "the center passed in belongs to the caller: it stays open"
    center.close()
    assert kv.closed


def test_a_switch_reaching_a_closing_consumer_moves_nothing() -> None:
    """close() leaves the group of the cluster in use itself; a switch that reaches its last
    steps meanwhile must not take that consumer as the old one and leave with it a second time
    (a thread of its own then polled a closed consumer: RuntimeError)."""
    center = ConfigCenter(MemoryStore())
    for name in ("kafka-a", "kafka-b"):
        center.put_cluster(ClusterSpec(name=name, kind="kafka", url=f"127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["kafka-a", "kafka-b"], "kafka-a")
    config = {"group.id": "g", "hotstandby.route": "r", "hotstandby.etcd": f"127.0.0.1:{_closed_port()}",
              "enable.auto.commit": False}  # fmt: skip
    consumer = Consumer(config, center=center)
    route = center.route("r")
    plan = SwitchPlan(current=route, target=route, source=center.cluster("kafka-a"),
                      destination=center.cluster("kafka-b"), links={}, drain_timeout_s=0.0)  # fmt: skip
    switch = consumer._switch
    switch._new = consumer._state.connect(plan.destination)  # as connect() leaves it
    in_use = consumer._state.inner
    consumer.close()
    left_again: list[Any] = []
    switch.leaves.leave_in_background = lambda raw, spec: left_again.append(raw)  # type: ignore[method-assign]
    switch.move(plan)
    switch.resume(plan)
    assert consumer._state.inner is in_use and consumer.cluster == "kafka-a"
    assert left_again == [], "no second leave of the consumer close() left with"
    center.close()
