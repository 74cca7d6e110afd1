"""Clients while etcd is down: creation waits up to its timeout, running clients keep working."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from hotstandby.adapters.kafka import Producer as KafkaProducer
from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.etcd_kill import kill_etcd
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.pulsar_helpers import acknowledge_until
from tests.support import capture_logs, wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache

ROUTE = "payments"
OUTAGE_S = 15.0
QUIET = {"logger": pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), "operation_timeout_seconds": 10}


@pytest.fixture
def etcd_down(refcluster: RefCluster) -> Iterator[None]:
    """etcd SIGKILLed for the test; started again (with its data) afterwards if the test did not."""
    kill_etcd(refcluster)
    try:
        yield
    finally:
        if not refcluster.running()["etcd"]:
            refcluster.restart("etcd")


def _client(refcluster: RefCluster, namespace: str, timeout_ms: int) -> Client:
    return Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                  options={"hotstandby.etcd.timeout.ms": timeout_ms}, **QUIET)  # type: ignore[arg-type]  # fmt: skip


def test_creating_a_client_during_a_short_outage_waits_for_etcd(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, etcd_down: None
) -> None:
    back_at: list[float] = []

    def bring_back() -> None:
        time.sleep(3.0)  # the outage being simulated, not a wait for a condition
        refcluster.restart("etcd")
        back_at.append(time.monotonic())

    restarter = threading.Thread(target=bring_back)
    restarter.start()
    started = time.monotonic()
    try:
        client = _client(refcluster, namespace, 30_000)
    finally:
        restarter.join()
    try:
        assert client.cluster == "pulsar-a"
        assert back_at and time.monotonic() >= back_at[0], "created only once etcd answered"
        assert time.monotonic() - started < 30
    finally:
        client.close()


def test_creating_a_client_while_etcd_stays_down_fails_after_the_timeout_naming_the_endpoints(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, etcd_down: None
) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigCenterUnavailable) as failed:
        _client(refcluster, namespace, 3_000)
    waited = time.monotonic() - started
    assert 3.0 <= waited < 10.0, waited
    assert f"127.0.0.1:{refcluster.ports.etcd}" in str(failed.value)


def test_a_pulsar_producer_and_consumer_keep_working_through_an_etcd_outage(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """etcd SIGKILLed for 15 s while a Pulsar producer sends (synchronously), a consumer
    receives and acknowledges, and a Kafka producer produces: no call raises or blocks beyond
    its own timeout, nothing is lost or handed out twice, and the acknowledgements made during
    the outage are stored once etcd is back."""
    topic = f"persistent://public/default/outage-{uuid.uuid4().hex[:8]}"
    client = _client(refcluster, namespace, 5_000)
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    producer = client.create_producer(topic, send_timeout_millis=10_000)
    kafka_topic = f"outage-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), kafka_topic, 1)
    kafka = KafkaProducer(route_config(refcluster, namespace, **{"hotstandby.etcd.timeout.ms": 5_000}))
    delivered: list[str | None] = []  # the Kafka producer's delivery reports (None: success)
    sent: list[str] = []
    got: list[str] = []
    errors: list[BaseException] = []
    slowest = {"send": 0.0, "receive": 0.0, "acknowledge": 0.0, "produce": 0.0}
    stop = threading.Event()

    def timed(what: str, call: object, *args: object) -> object:
        began = time.monotonic()
        try:
            return call(*args)  # type: ignore[operator]
        finally:
            slowest[what] = max(slowest[what], time.monotonic() - began)

    def report(err: object, _msg: object) -> None:
        delivered.append(None if err is None else str(err))

    def produce() -> None:
        try:
            i = 0
            while not stop.is_set():
                timed("send", producer.send, f"m{i}".encode())
                sent.append(f"m{i}")
                timed("produce", lambda v: kafka.produce(kafka_topic, v, on_delivery=report), f"m{i}".encode())
                kafka.poll(0)
                i += 1
                time.sleep(0.01)  # pacing: about 100 messages a second
        except BaseException as exc:
            errors.append(exc)

    def consume() -> None:
        try:
            while not stop.is_set() or len(got) < len(sent):
                try:
                    msg = timed("receive", consumer.receive, 200)
                except pulsar.Timeout:
                    if stop.is_set() and len(got) >= len(sent):
                        return
                    continue
                got.append(msg.data().decode())  # type: ignore[attr-defined]
                timed("acknowledge", consumer.acknowledge, msg)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(got) >= 50, 30, "traffic before the outage")
        kill_etcd(refcluster)
        killed_at, during = time.monotonic(), len(got)
        wait_for(lambda: time.monotonic() - killed_at >= OUTAGE_S or errors, OUTAGE_S + 5, "the outage")
        consumed_during = len(got) - during
        refcluster.restart("etcd")
        sent_by_then = len(sent)
        wait_for(lambda: len(got) >= sent_by_then + 100 or errors, 60, "traffic after the outage")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        if not refcluster.running()["etcd"]:
            refcluster.restart("etcd")
    assert errors == [], f"an SDK call raised during the outage: {errors[:3]}"
    assert consumed_during > 500, f"only {consumed_during} messages delivered during the {OUTAGE_S} s outage"
    assert max(slowest.values()) < 11, f"a call blocked: {slowest}"
    assert sorted(got) == sorted(sent), "lost or handed out twice"
    assert kafka.flush(30) == 0
    assert delivered == [None] * len(sent), f"Kafka deliveries failed: {[d for d in delivered if d][:3]}"
    kafka.close()
    print(f"[measure] slowest calls (s) with etcd down for {OUTAGE_S} s: {slowest}; {consumed_during} delivered")
    store = LedgerStore(center)
    wait_for(lambda: len(store.load("s", topic, 0).ledger) == len(sent), 30, "the acknowledgements to be stored")
    client.close()


def test_a_switch_cut_short_by_an_etcd_outage_leaves_the_consumers_delivering(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """etcd dies in the middle of a switch (after the consumers stopped handing out for it):
    the switch fails, the consumers go on with the old cluster during the outage, and the
    switch completes once etcd is back."""
    topic = f"persistent://public/default/outage-{uuid.uuid4().hex[:8]}"
    for cluster in ("pulsar-a", "pulsar-b"):
        center.register_topic(cluster, topic)
    client = _client(refcluster, namespace, 5_000)
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    producer = client.create_producer(topic)
    follower = client.follower
    real = follower.await_peers

    def etcd_dies_now(*args: object, **kwargs: object) -> list[str]:
        follower.await_peers = real  # type: ignore[method-assign]  # once
        kill_etcd(refcluster)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    follower.await_peers = etcd_dies_now  # type: ignore[method-assign]
    try:
        center.switch(ROUTE, "pulsar-b", reason="test")
        wait_for(lambda: not refcluster.running()["etcd"], 30, "etcd to die mid-switch")
        for i in range(50):
            producer.send(f"m{i}".encode())
        wanted = {f"m{i}" for i in range(50)}
        got = acknowledge_until(consumer, wanted, timeout=10)  # during the outage
        assert sorted(got) == sorted(wanted)
        assert client.cluster == "pulsar-a"
        refcluster.restart("etcd")
        wait_for(lambda: client.cluster == "pulsar-b", 60, "the switch to complete once etcd is back")
    finally:
        if not refcluster.running()["etcd"]:
            refcluster.restart("etcd")
    client.close()


def test_closing_a_consumer_and_its_client_while_etcd_is_down_does_not_raise(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"persistent://public/default/outage-{uuid.uuid4().hex[:8]}"
    client = _client(refcluster, namespace, 2_000)
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    producer.send(b"m0")
    kill_etcd(refcluster)
    try:
        with capture_logs() as logs:
            consumer.acknowledge(consumer.receive(timeout_millis=10_000))  # not storable now
            started = time.monotonic()
            consumer.close()
            client.close()
            took = time.monotonic() - started
    finally:
        refcluster.restart("etcd")
    assert took < 15, f"closing took {took:.1f} s"
    [unstored] = [e for e in logs if e["event"] == "consumer.acknowledgements_not_stored"]
    assert unstored["messages"] == 1 and unstored["subscription"] == "s"
