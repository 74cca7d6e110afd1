"""etcd stalling under a running Kafka producer and consumer: the path to etcd accepts
connections and forwards nothing (what a partition looks like), for longer than the clients'
keepalive. No call into the SDK blocks longer than its own timeout, acknowledgements are kept
and stored once etcd answers again, and a flip made after that is followed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.presence import list_clients
from hotstandby.refcluster import RefCluster
from tests.fault_relay import FaultRelay, Mode
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.test_kafka_consumer_etcd_outage import stored_count
from tests.support import wait_for

T = TypeVar("T")
STALL_S = 17.0  # longer than the etcd client's keepalive (10 s, then 5 s for the answer)
COMMIT_TIMEOUT_S = 5.0  # the etcd timeout a synchronous commit waits for its ledgers
COMMIT_MARGIN_S = 0.5  # what a synchronous commit may take past it (docs/guarantees.md)


class Clock:
    """The longest time each kind of call took."""

    def __init__(self) -> None:
        self.longest: dict[str, float] = {}

    def __call__(self, name: str, call: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return call()
        finally:
            took = time.monotonic() - started
            self.longest[name] = max(self.longest.get(name, 0.0), took)


@pytest.fixture
def relay(refcluster: RefCluster) -> Iterator[FaultRelay]:
    if refcluster.secure:
        pytest.skip("the relay is put in front of a plaintext etcd")
    with FaultRelay(("127.0.0.1", refcluster.ports.etcd)) as r:
        yield r


def test_etcd_stalling_under_a_producer_and_a_consumer(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, relay: FaultRelay
) -> None:
    topic = f"st-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    through_relay: dict[str, Any] = {"hotstandby.etcd": relay.address}
    producer = Producer(route_config(refcluster, namespace, **through_relay, **{"hotstandby.client.id": "st-p"}))
    consumer = Consumer(route_config(refcluster, namespace, **through_relay, **{
        "group.id": group, "auto.commit.interval.ms": 200, "hotstandby.client.id": "st-c"}))  # fmt: skip
    clock = Clock()
    got: list[str] = []
    sent = 0

    def produce(count: int) -> None:
        nonlocal sent
        for _ in range(count):
            seq = sent
            clock("produce", lambda: producer.produce(topic, value=f"r{seq}".encode(), partition=seq % 2))  # noqa: B023
            sent += 1
        clock("poll (producer)", lambda: producer.poll(0))

    def poll_once() -> None:
        msg = clock("poll", lambda: consumer.poll(0.1))
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())

    def poll_until(wanted: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(got) < wanted:
            assert time.monotonic() < deadline, f"{len(got)} of {wanted} records within {timeout} s"
            poll_once()

    try:
        consumer.subscribe([topic])
        produce(100)
        assert producer.flush(30) == 0
        poll_until(100, 60)

        relay.set(Mode.STALL)
        stalled = time.monotonic()
        produce(150)
        assert clock("flush", lambda: producer.flush(30)) == 0, "the brokers do not need etcd"
        poll_until(250, STALL_S)  # auto commit every 200 ms meanwhile
        with pytest.raises(KafkaException) as failed:
            clock("commit", lambda: consumer.commit(asynchronous=False))
        assert failed.value.args[0].code() == KafkaError._TIMED_OUT
        while time.monotonic() < stalled + STALL_S:  # on through the keepalive's verdict
            produce(1)
            poll_once()
        relay.set(Mode.PASS)

        # Everything acknowledged during the stall reaches etcd once it answers.
        deadline = time.monotonic() + 60
        while stored_count(center, group, topic) < len(got):
            assert time.monotonic() < deadline, f"stored {stored_count(center, group, topic)} of {len(got)}"
            poll_once()
        committed = clock("commit again", lambda: consumer.commit(asynchronous=False))
        assert committed and all(tp.error is None for tp in committed), committed

        # A flip made after etcd came back is followed by both clients.
        center.switch("orders", "kafka-b", reason="after the stall")

        def moved() -> bool:
            produce(1)
            poll_once()
            docs = list_clients(center, "orders")
            return len(docs) == 2 and all(d.get("cluster") == "kafka-b" and d.get("state") == "active" for d in docs)

        wait_for(moved, 60, "both clients on kafka-b")
        produce(50)
        assert producer.flush(30) == 0
        poll_until(sent, 60)
    finally:
        relay.set(Mode.PASS)
        consumer.close()
        producer.close()
    assert sorted(got) == sorted(f"r{i}" for i in range(sent)), "lost or duplicated"
    print(
        f"[measure] etcd stalled {STALL_S:.0f} s: longest calls (s) { {k: round(v, 3) for k, v in clock.longest.items()} }"
    )
    # No call waited on etcd longer than its own timeout.
    assert clock.longest["produce"] < 1.0, clock.longest
    assert clock.longest["poll"] < 1.0 and clock.longest["poll (producer)"] < 1.0, clock.longest
    # A commit's calls to etcd end by its timeout (configcenter/call_deadline.py).
    assert clock.longest["flush"] < 30.0 and clock.longest["commit"] < COMMIT_TIMEOUT_S + COMMIT_MARGIN_S, clock.longest
