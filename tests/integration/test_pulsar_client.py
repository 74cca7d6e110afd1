"""The Pulsar facade on the reference cluster: identity, the ledger filter, a switch."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import decode_identity
from hotstandby.configcenter import ConfigCenter
from hotstandby.identity import HEADER
from hotstandby.refcluster import RefCluster
from tests.support import wait_for

ROUTE = "payments"


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    """A fresh topic that the reference replicators copy both ways."""
    name = f"persistent://public/default/sdk-{uuid.uuid4().hex[:8]}"
    with ConfigCenter.open(replace(refcluster.settings())) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            center.register_topic(cluster, name)
    return name


@pytest.fixture
def client(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[Client]:
    made = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                  operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    yield made
    made.close()


def take(consumer: object, count: int, timeout: float = 60.0) -> list[pulsar.Message]:
    """The next ``count`` messages handed out (fails after ``timeout``)."""
    got: list[pulsar.Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"{len(got)} of {count} messages within {timeout} s"
        try:
            got.append(consumer.receive(timeout_millis=int(min(left, 1.0) * 1000)))  # type: ignore[attr-defined]
        except pulsar.Timeout:
            continue
    return got


def nothing_more(consumer: object, within: float = 3.0) -> list[str]:
    """Values still handed out within ``within`` s (a bounded wait for an absence)."""
    extra: list[str] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            extra.append(consumer.receive(timeout_millis=200).data().decode())  # type: ignore[attr-defined]
        except pulsar.Timeout:
            continue
    return extra


def test_messages_carry_an_identity_and_keep_pulsars_message_api(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i % 3}") for i in range(20)]
    results: list[pulsar.Result] = []
    producer.send_async(b"last", lambda res, _mid: results.append(res))
    producer.flush()
    assert results == [pulsar.Result.Ok] and len(ids) == 20
    got = take(consumer, 21)
    assert [m.data() for m in got] == [f"m{i}".encode() for i in range(20)] + [b"last"]
    rids = [decode_identity(m.properties()[HEADER]) for m in got]
    assert [r.sequence for r in rids] == list(range(21)), "one session, contiguous sequences"
    assert len({r.session for r in rids}) == 1
    assert got[3].properties()["i"] == "3" and got[3].partition_key() == "k0"
    assert got[0].topic_name() == topic and got[0].publish_timestamp() > 0
    with pytest.raises(ValueError, match=HEADER):
        producer.send(b"x", properties={HEADER: "00"})
    for m in got:
        consumer.acknowledge(m)


def test_a_restart_filters_what_was_acknowledged_even_if_the_broker_forgot(
    refcluster: RefCluster, client: Client, topic: str
) -> None:
    producer = client.create_producer(topic)
    for i in range(100):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    first = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                             initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    seen = take(first, 60)
    for m in seen:
        first.acknowledge(m)
    first.close()
    # The broker loses the subscription's acknowledgements (as after a reset by mistake):
    # the ledger alone must keep them from being handed out again.
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        # seek(0) (publish time), not MessageId.earliest, which pulsar-lite refuses (docs/refcluster.md)
        raw.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared).seek(0)
    finally:
        raw.close()
    second = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    rest = [m.data().decode() for m in take(second, 40)]
    assert nothing_more(second) == []
    assert second.filtered >= 60
    assert sorted({m.data().decode() for m in seen} | set(rest)) == sorted(f"m{i}" for i in range(100))
    assert not {m.data().decode() for m in seen} & set(rest)


def test_a_switch_loses_nothing_and_hands_out_nothing_acknowledged_twice(
    client: Client, center: ConfigCenter, topic: str
) -> None:
    """Shared subscription, acknowledgements out of order, some messages never acknowledged
    and some negatively acknowledged at the flip: those come again on pulsar-b, nothing else."""
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest,
                                negative_ack_redelivery_delay_ms=100)  # fmt: skip
    producer = client.create_producer(topic)
    for i in range(200):
        producer.send_async(f"a{i}".encode(), None)
    producer.flush()
    first = take(consumer, 120)
    random.Random(7).shuffle(first)
    acked = {m.data().decode() for m in first[:100]}
    for m in first[:100]:
        consumer.acknowledge(m)
    for m in first[100:110]:
        consumer.negative_acknowledge(m)
    # first[110:] stay handed out, never acknowledged
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    for i in range(100):
        producer.send_async(f"b{i}".encode(), None)  # on pulsar-b now
    producer.flush()
    wanted = {f"a{i}" for i in range(200)} - acked | {f"b{i}" for i in range(100)}
    later: list[str] = []
    deadline = time.monotonic() + 120
    while not wanted <= set(later):
        assert time.monotonic() < deadline, f"never handed out: {sorted(wanted - set(later))[:10]}"
        try:
            msg = consumer.receive(timeout_millis=500)
        except pulsar.Timeout:
            continue
        later.append(msg.data().decode())
        consumer.acknowledge(msg)
    later += nothing_more(consumer)
    assert consumer.filtered >= 100, "pulsar-b's copies of the acknowledged messages were read and filtered"
    assert not acked & set(later), "acknowledged before the switch, handed out again"
    twice = sorted({v for v in later if later.count(v) > 1})
    assert not twice, f"handed out twice after the switch: {twice}"
