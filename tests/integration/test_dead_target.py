"""A flip to a cluster that does not answer: clients keep serving from the old cluster while
it answers, and move as soon as the new one does."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.kafka import Consumer as KafkaConsumer
from hotstandby.adapters.kafka import Producer as KafkaProducer
from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.presence import list_clients
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config
from tests.support import capture_logs, wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache

WINDOW_S = 8.0  # how long the target stays down after the flip


@pytest.fixture
def kill_target(refcluster: RefCluster) -> Iterator[Callable[[str], None]]:
    """SIGKILL a broker; it is started again after the test if the test did not."""
    killed: list[str] = []

    def kill(broker: str) -> None:
        refcluster.kill(broker, signal.SIGKILL)
        killed.append(broker)

    yield kill
    for broker in killed:
        if not refcluster.running()[broker]:
            refcluster.restart(broker)


class Traffic:
    """A producing thread and a consuming thread; values in order of sending and receipt."""

    def __init__(self, send: Callable[[str], None], receive: Callable[[], str | None]) -> None:
        self.sent: list[str] = []
        self.got: list[tuple[float, str]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self._threads = [threading.Thread(target=self._produce, args=(send,)),
                         threading.Thread(target=self._consume, args=(receive,))]  # fmt: skip
        for t in self._threads:
            t.start()

    def _produce(self, send: Callable[[str], None]) -> None:
        try:
            i = 0
            while not self.stop.is_set():
                send(f"m{i}")
                self.sent.append(f"m{i}")
                i += 1
                time.sleep(0.02)  # pacing: about 50 records a second
        except BaseException as exc:
            self.errors.append(exc)

    def _consume(self, receive: Callable[[], str | None]) -> None:
        try:
            while not self.stop.is_set():
                value = receive()
                if value is not None:
                    self.got.append((time.monotonic(), value))
        except BaseException as exc:
            self.errors.append(exc)

    def received_between(self, start: float, end: float) -> int:
        return sum(1 for at, _ in self.got if start <= at < end)

    def close(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(60)


def _problems(center: ConfigCenter, route: str) -> dict[str, str | None]:
    """Each live client of ``route``: why its switch has not completed, as its presence says."""
    return {c["client"]: c.get("problem") for c in list_clients(center, route)}


def _outage(
    refcluster: RefCluster, center: ConfigCenter, route: str, target: str, traffic: Traffic, moved: Callable[[], bool]
) -> tuple[int, float, list[dict[str, Any]]]:
    """Flip ``route`` to the (killed) ``target``; records received during the window, seconds
    from the target's restart to the clients' move, the switch events logged. While the target
    is down every client says so in its presence, and says nothing once it moved."""
    with capture_logs() as logs:
        wait_for(lambda: len(traffic.got) >= 50 or traffic.errors, 60, "traffic before the flip")
        center.switch(route, target, reason="dead target test")
        flipped = time.monotonic()
        wait_for(lambda: time.monotonic() - flipped >= WINDOW_S or traffic.errors, WINDOW_S + 5, "the window")
        during = traffic.received_between(flipped + 1.0, flipped + WINDOW_S)
        stuck = _problems(center, route)
        refcluster.restart(target)
        restarted = time.monotonic()
        wait_for(lambda: moved() or traffic.errors, 60, "the clients to move once the target answers")
        took = time.monotonic() - restarted
    assert stuck and all(f"{target} (epoch" in str(p) and "does not answer" in str(p)
                                   for p in stuck.values()), stuck  # fmt: skip
    wait_for(lambda: set(_problems(center, route).values()) == {None}, 10, "the problems gone from the presences")
    print(
        f"[measure] {route}: {during} records received in the {WINDOW_S - 1:.0f} s window, moved {took:.1f} s after restart"
    )
    return during, took, [e for e in logs if e["event"].startswith("switch.")]


def test_pulsar_clients_keep_serving_from_the_old_cluster_until_the_target_answers(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, kill_target: Callable[[str], None]
) -> None:
    topic = f"persistent://public/default/dead-{uuid.uuid4().hex[:8]}"
    center.register_topic("pulsar-a", topic)
    center.register_topic("pulsar-b", topic)
    client = Client("payments", etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    producer = client.create_producer(topic, send_timeout_millis=30_000)

    def receive() -> str | None:
        try:
            msg = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            return None
        consumer.acknowledge(msg)
        return str(msg.data().decode())

    kill_target("pulsar-b")
    traffic = Traffic(lambda v: producer.send(v.encode()), receive)
    try:
        during, took, events = _outage(refcluster, center, "payments", "pulsar-b", traffic,
                                       lambda: client.cluster == "pulsar-b")  # fmt: skip
        wait_for(lambda: {v for _, v in traffic.got} >= set(traffic.sent[:-5]) or traffic.errors, 60, "every record")
    finally:
        traffic.close()
    assert traffic.errors == []
    expected = WINDOW_S * 50 / 2
    assert during > expected, f"{during} records received while the target was down (> {expected} expected)"
    assert took < 15, f"moved {took:.1f} s after the target answered"
    unreachable = [e for e in events if e["event"] == "switch.target_unreachable"]
    assert len(unreachable) >= 2 and all(e["to"] == "pulsar-b" for e in unreachable), events
    values = [v for _, v in traffic.got]
    assert set(values) >= set(traffic.sent[:-5]), "lost"
    assert len(values) == len(set(values)), "handed out twice"
    client.close()


def test_kafka_clients_keep_serving_from_the_old_cluster_until_the_target_answers(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, kill_target: Callable[[str], None]
) -> None:
    topic = f"dead-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    producer = KafkaProducer(route_config(refcluster, namespace))
    consumer = KafkaConsumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                                   "auto.offset.reset": "earliest",
                                                                   "auto.commit.interval.ms": 200}))  # fmt: skip
    consumer.subscribe([topic])
    failed: list[str] = []

    def send(value: str) -> None:
        producer.produce(topic, value=value, on_delivery=lambda err, _m: failed.append(str(err)) if err else None)
        producer.poll(0)

    def receive() -> str | None:
        msg = consumer.poll(0.2)
        if msg is None or msg.error() is not None:
            return None
        return str(msg.value().decode())

    kill_target("kafka-b")
    traffic = Traffic(send, receive)
    try:
        during, took, events = _outage(refcluster, center, "orders", "kafka-b", traffic,
                                       lambda: consumer.cluster == producer.cluster == "kafka-b")  # fmt: skip
    finally:
        traffic.close()
    assert traffic.errors == []
    expected = WINDOW_S * 50 / 2
    assert during > expected, f"{during} records received while the target was down (> {expected} expected)"
    assert took < 20, f"moved {took:.1f} s after the target answered"
    unreachable = [e for e in events if e["event"] == "switch.target_unreachable"]
    assert {e["to"] for e in unreachable} == {"kafka-b"} and len(unreachable) >= 4, events
    producer.flush(30)
    assert failed == [], f"deliveries failed: {failed[:3]}"
    consumer.close()
    producer.close()
