"""The Pulsar facade on the reference cluster: where a subscription starts on the cluster it
moves to (cumulative acknowledgements, an Exclusive subscription after its copies, the
replication source position, Key_Shared order, the replicated subscription state)."""

from __future__ import annotations

import json
import time
import urllib.request

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import encode_identity
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, acknowledge_until, nothing_more, produce_values, take
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def test_cumulative_acknowledgements_on_an_exclusive_subscription_across_a_switch(
    client: Client, center: ConfigCenter, topic: str
) -> None:
    produce_values(client, topic, [f"a{i}" for i in range(100)])
    consumer = client.subscribe(topic, "x", initial_position=pulsar.InitialPosition.Earliest)  # Exclusive
    first = take(consumer, 70)
    consumer.acknowledge_cumulative(first[49])  # a0..a49; a50..a69 handed out, not acknowledged
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    rest = [m.data().decode() for m in take(consumer, 50)]
    assert rest == [f"a{i}" for i in range(50, 100)], "in order, from the first unacknowledged message"
    assert nothing_more(consumer, within=1.5) == []


def test_an_exclusive_subscription_starts_after_the_copies_it_processed(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """60 messages written on pulsar-b reach pulsar-a as copies and are processed there, then
    20 of pulsar-a's own. After the flip the subscription, new on pulsar-b, starts at the last
    copy's source position instead of the earliest message: it reads again the entry before
    it, that copy's and the 20 copies of pulsar-a's messages (filtered), not all 60."""
    session = new_session()
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-b").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        on_b = raw.create_producer(topic, batching_enabled=False)
        for i in range(60):  # written on pulsar-b by another SDK producer (its identities)
            on_b.send(f"b{i}".encode(), properties={HEADER: encode_identity(RecordId(session, 0, i))})
    finally:
        raw.close()
    consumer = client.subscribe(topic, "x", initial_position=pulsar.InitialPosition.Earliest)  # Exclusive
    copies = take(consumer, 60, timeout=90)
    assert [m.data().decode() for m in copies] == [f"b{i}" for i in range(60)]
    produce_values(client, topic, [f"a{i}" for i in range(20)])  # closed: nothing re-sent at the flip
    own = take(consumer, 20)
    consumer.acknowledge_cumulative(own[-1])
    before = consumer.filtered
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    produce_values(client, topic, [f"c{i}" for i in range(10)])
    rest = [m.data().decode() for m in take(consumer, 10)] + nothing_more(consumer, within=1.5)
    assert rest == [f"c{i}" for i in range(10)]
    again = consumer.filtered - before
    assert again <= 30, f"read {again} processed messages again: started before the copies' position"


def test_a_source_position_is_used_only_where_the_cluster_still_holds_that_message(
    refcluster: RefCluster, topic: str
) -> None:
    """A cluster that came back empty may store other messages at the same position: the start
    moves there only when the message at that position has the copy's identity."""
    from hotstandby.adapters.pulsar.consumer.start_position import holds

    session = new_session()
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-b").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = raw.create_producer(topic, batching_enabled=False)
        ids = [producer.send(b"m", properties={HEADER: encode_identity(RecordId(session, 0, i))}) for i in range(5)]
        third = ids[2]
        assert holds(raw, topic, third.ledger_id(), third.entry_id(), RecordId(session, 0, 2))
        assert not holds(raw, topic, third.ledger_id(), third.entry_id(), RecordId(session, 0, 3))
        assert not holds(raw, topic, third.ledger_id(), third.entry_id() + 10, RecordId(session, 0, 2))
    finally:
        raw.close()


def _key_shared_across_a_switch(
    client: Client, center: ConfigCenter, topic: str, consumers: int
) -> list[tuple[int, int]]:
    """150 keyed messages, 80 handed out and acknowledged, a flip, 50 more: every message as
    (consumer, value) in the order handed out."""
    kwargs = {"consumer_type": pulsar.ConsumerType.KeyShared, "initial_position": pulsar.InitialPosition.Earliest}
    members = [client.subscribe(topic, "k", **kwargs) for _ in range(consumers)]
    producer = client.create_producer(topic)
    for i in range(150):
        producer.send_async(f"{i % 5}:{i}".encode(), None, partition_key=f"key{i % 5}")
    producer.flush()
    seen: list[tuple[int, int]] = []

    def poll_until(count: int) -> None:
        deadline = time.monotonic() + 60
        while len({v for _, v in seen}) < count:
            assert time.monotonic() < deadline, f"{len(seen)} of {count}"
            for n, c in enumerate(members):
                try:
                    msg = c.receive(timeout_millis=50)
                except pulsar.Timeout:
                    continue
                seen.append((n, int(msg.data().decode().split(":")[1])))
                c.acknowledge(msg)  # at once: nothing is left unacknowledged at the flip

    poll_until(80)
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    for i in range(150, 200):
        producer.send_async(f"{i % 5}:{i}".encode(), None, partition_key=f"key{i % 5}")
    producer.flush()
    poll_until(200)
    assert sorted(v for _, v in seen) == list(range(200)), "each message handed out once"
    return seen


def test_key_shared_keeps_each_keys_order_across_a_switch(client: Client, center: ConfigCenter, topic: str) -> None:
    """One consumer: the replicated copies, the producer's re-sent twins and the new messages
    reach it in each key's order."""
    seen = _key_shared_across_a_switch(client, center, topic, consumers=1)
    for key in range(5):
        values = [v for _, v in seen if v % 5 == key]
        assert values == sorted(values), f"key{key} out of order: {values}"


def test_key_shared_consumers_each_keep_their_keys_order_across_a_switch(
    client: Client, center: ConfigCenter, topic: str
) -> None:
    """Two consumers re-join the subscription on the new cluster one after the other. Pulsar
    holds a moved key's later messages until its earlier ones are acknowledged; pulsar-lite
    moves the key at once (docs/refcluster.md), so across consumers the order is the broker's
    — each consumer still hands out its messages of a key in order, and each message once."""
    seen = _key_shared_across_a_switch(client, center, topic, consumers=2)
    for n in range(2):
        for key in range(5):
            values = [v for c, v in seen if c == n and v % 5 == key]
            assert values == sorted(values), f"consumer {n}, key{key} out of order: {values}"


def _backlog(refcluster: RefCluster, cluster: str, topic: str, subscription: str) -> int | None:
    """The subscription's backlog on ``cluster`` (its admin API), None while it has none there."""
    port = refcluster.ports.of(f"{cluster}_http")
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}/stats", timeout=5) as response:
            stats = json.load(response)
    except OSError:
        return None
    found = stats.get("subscriptions", {}).get(subscription)
    return None if found is None else int(found.get("msgBacklog", -1))


@pytest.mark.apache_only
def test_a_subscription_resumes_on_the_other_cluster_near_where_it_acknowledged(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """The SDK subscribes with replicated subscription state: Apache Pulsar carries the
    acknowledged position to pulsar-b, and after the flip the subscription reads again what
    was acknowledged since the last snapshot, not all that pulsar-b holds, as the same
    subscription with its own cursor there does. Messages without an identity (a raw
    producer) cannot be filtered: each one read again is handed out again, and counted."""
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = raw.create_producer(topic)
        subscriptions = {"carried": {}, "own": {"replicate_subscription_state_enabled": False}}
        consumers = {name: client.subscribe(topic, name, consumer_type=pulsar.ConsumerType.Shared,
                                            initial_position=pulsar.InitialPosition.Earliest, **extra)
                     for name, extra in subscriptions.items()}  # fmt: skip
        for i in range(300):
            producer.send_async(f"a{i}".encode(), None)
        producer.flush()
        for consumer in consumers.values():
            for msg in take(consumer, 300):
                consumer.acknowledge(msg)
        # Its backlog there counts the snapshot markers too: a few, never the 300.
        wait_for(lambda: (_backlog(refcluster, "pulsar-b", topic, "carried") or 300) < 50, 60,
                 "pulsar-b's copy of the subscription to follow the acknowledgements")  # fmt: skip
        center.switch(ROUTE, "pulsar-b", reason="test")
        wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
        producer.send(b"last")  # on pulsar-a, copied to pulsar-b
        again = {}
        for name, consumer in consumers.items():
            got = acknowledge_until(consumer, {"last"}, timeout=60)
            again[name] = len(got) - 1
    finally:
        raw.close()
    assert again["own"] >= 300, f"the own cursor read pulsar-b's copies again: {again}"
    assert again["carried"] < 50, f"read again after the flip: {again}"
