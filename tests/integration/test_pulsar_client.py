"""The Pulsar facade on the reference cluster: identity, the ledger filter, a switch."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import encode_identity, identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import acknowledge_until, nothing_more, take
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache

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
    rids = [rid for m in got if (rid := identity_of(m)) is not None]  # not among the properties shown
    assert len(rids) == 21 and all(HEADER not in m.properties() for m in got)
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
    forget_acknowledgements(refcluster, topic, "s")
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
    # The subscription's own cursor on pulsar-b: the copies are read there, and filtered.
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest,
                                negative_ack_redelivery_delay_ms=100,
                                replicate_subscription_state_enabled=False)  # fmt: skip
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
    later = acknowledge_until(consumer, wanted, timeout=120)
    later += nothing_more(consumer)
    assert consumer.filtered >= 100, "pulsar-b's copies of the acknowledged messages were read and filtered"
    assert not acked & set(later), "acknowledged before the switch, handed out again"
    twice = sorted({v for v in later if later.count(v) > 1})
    assert not twice, f"handed out twice after the switch: {twice}"


def forget_acknowledgements(refcluster: RefCluster, topic: str, subscription: str) -> None:
    """The broker loses the subscription's acknowledgements (a reset by mistake, acks never
    sent): the ledger alone must keep those messages from being handed out again."""
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        # seek(0) (publish time), not MessageId.earliest, which pulsar-lite refuses (docs/refcluster.md)
        raw.subscribe(topic, subscription, consumer_type=pulsar.ConsumerType.Shared).seek(0)
    finally:
        raw.close()


def produce_values(client: Client, topic: str, values: list[str], **options: Any) -> None:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5)
    for v in values:
        producer.send_async(v.encode(), None, **options)
    producer.flush()
    producer.close()


def test_acknowledging_by_message_id_records_the_messages_in_the_ledger(
    refcluster: RefCluster, client: Client, topic: str
) -> None:
    """pulsar-client takes a message id where it takes a message: the ledger records the
    message behind it, so it stays filtered after the broker forgot the acknowledgement."""
    produce_values(client, topic, [f"m{i}" for i in range(30)])
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    got = take(consumer, 30)
    for msg in got[:10]:
        consumer.acknowledge(msg.message_id())
    consumer.negative_acknowledge(got[10].message_id())  # given back: handed out again
    consumer.close()
    forget_acknowledgements(refcluster, topic, "s")
    again = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    rest = [m.data().decode() for m in take(again, 20)] + nothing_more(again, within=1.5)
    assert sorted(rest) == sorted(f"m{i}" for i in range(10, 30))


def test_batch_receive_redelivery_and_unsubscribe(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest,
                                batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(50, -1, 200))  # fmt: skip
    produce_values(client, topic, [f"m{i}" for i in range(30)])
    got: list[pulsar.Message] = []
    deadline = time.monotonic() + 30
    while len(got) < 30:
        assert time.monotonic() < deadline, f"{len(got)} of 30 by batch_receive"
        got += consumer.batch_receive()
    assert sorted(m.data().decode() for m in got) == sorted(f"m{i}" for i in range(30))
    for m in got[:20]:
        consumer.acknowledge(m)
    consumer.redeliver_unacknowledged_messages()  # the other 10 come again, once
    again = [m.data().decode() for m in take(consumer, 10)]
    assert sorted(again) == sorted(m.data().decode() for m in got[20:])
    assert nothing_more(consumer, within=1.5) == []
    consumer.unsubscribe()
    consumer.close()


def test_a_reader_goes_on_where_it_was_after_a_switch(client: Client, center: ConfigCenter, topic: str) -> None:
    produce_values(client, topic, [f"a{i}" for i in range(100)])
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    first = [reader.read_next(10_000).data().decode() for _ in range(60)]
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    produce_values(client, topic, [f"b{i}" for i in range(20)])
    rest: list[str] = []
    deadline = time.monotonic() + 60
    while len(rest) < 60:
        assert time.monotonic() < deadline, f"read {len(rest)} of 60 after the switch"
        try:
            rest.append(reader.read_next(1000).data().decode())
        except pulsar.Timeout:
            continue
    with pytest.raises(pulsar.Timeout):
        reader.read_next(1500)
    reader.close()
    assert first == [f"a{i}" for i in range(60)]
    assert sorted(first + rest) == sorted([f"a{i}" for i in range(100)] + [f"b{i}" for i in range(20)])
    assert reader.skipped >= 60, "pulsar-b's copies of what was read were skipped"


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


def test_a_consumer_that_crashes_without_closing_is_taken_over_with_its_ledger(
    refcluster: RefCluster, client: Client, center: ConfigCenter, namespace: str, topic: str, tmp_path: Path
) -> None:
    """A process acknowledges 40 messages and is SIGKILLed: whatever the broker got of those
    acknowledgements (here: nothing, its cursor is reset), the next consumer skips all 40."""
    produce_values(client, topic, [f"m{i}" for i in range(100)])
    script, report = tmp_path / "crash.py", tmp_path / "acked.json"
    script.write_text(CRASHING_CONSUMER)
    child = subprocess.Popen([sys.executable, str(script), f"127.0.0.1:{refcluster.ports.etcd}", namespace, topic,
                              str(report)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(report.exists, 60, "the child to acknowledge 40 messages")
        acked = set(json.loads(report.read_text()))
        assert len(acked) == 40
        store = LedgerStore(center)
        wait_for(lambda: len(store.load("s", topic, 0).ledger) >= 40, 30, "the child's ledger to be stored")
        child.send_signal(signal.SIGKILL)  # no close, no flush of what the broker has not got
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    forget_acknowledgements(refcluster, topic, "s")
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    rest = [m.data().decode() for m in take(consumer, 60, timeout=90)]
    rest += nothing_more(consumer)
    assert not acked & set(rest), "acknowledged by the crashed consumer, handed out again"
    assert sorted(acked | set(rest)) == sorted(f"m{i}" for i in range(100))


CRASHING_CONSUMER = """
import json, logging, os, sys
import pulsar
from hotstandby.adapters.pulsar import Client

etcd, namespace, topic, report = sys.argv[1:5]
quiet = logging.getLogger("pulsar-client")
quiet.setLevel(logging.CRITICAL)
client = Client("payments", etcd=etcd, namespace=namespace, logger=quiet)
consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                            initial_position=pulsar.InitialPosition.Earliest)
acked = []
while len(acked) < 40:
    msg = consumer.receive(timeout_millis=30_000)
    consumer.acknowledge(msg)
    acked.append(msg.data().decode())
with open(report + ".tmp", "w") as f:
    json.dump(acked, f)
os.replace(report + ".tmp", report)
sys.stdin.read()  # until the test SIGKILLs us (or ends: then stdin closes and we exit)
"""


@pytest.mark.parametrize("kind", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover])
def test_broker_acknowledgements_fold_into_a_cumulative_one_only_over_a_settled_prefix(
    refcluster: RefCluster, client: Client, topic: str, kind: pulsar.ConsumerType
) -> None:
    """An Exclusive or Failover consumer sends the broker one cumulative acknowledgement where
    every message before is settled, and single ones behind a message still unacknowledged:
    the broker then holds all acknowledged messages and not that one — a raw consumer of the
    subscription is given exactly it."""
    producer = client.create_producer(topic, batching_enabled=False)  # batched: see SubscriptionState._folded
    for i in range(30):
        producer.send_async(f"v{i}".encode(), None)
    producer.flush()
    consumer = client.subscribe(topic, "fold", consumer_type=kind, initial_position=pulsar.InitialPosition.Earliest)
    got = take(consumer, 30)
    for m in got[:10]:
        consumer.acknowledge(m)
    consumer.state.flush()  # a settled prefix: one cumulative acknowledgement
    for m in got[11:]:
        consumer.acknowledge(m)  # behind got[10]: one by one
    consumer.close()  # stores the ledger, then acknowledges on the broker
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        again = raw.subscribe(topic, "fold", consumer_type=kind)
        assert nothing_more(again, within=5.0) == [got[10].data().decode()]
    finally:
        raw.close()


@pytest.mark.parametrize("cumulative", [False, True])
def test_acknowledging_part_of_a_batch_loses_nothing_on_the_broker(
    refcluster: RefCluster, client: Client, topic: str, cumulative: bool
) -> None:
    """The first ten of one batch acknowledged (one by one, or cumulatively by the
    application): the broker must still hold the other twenty (the reference broker takes a
    cumulative acknowledgement there for the whole topic, see docs/refcluster.md)."""
    produce_values(client, topic, [f"v{i}" for i in range(30)])
    consumer = client.subscribe(topic, "part", consumer_type=pulsar.ConsumerType.Exclusive,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    got = take(consumer, 30)
    if cumulative:
        consumer.acknowledge_cumulative(got[9])
    else:
        for m in got[:10]:
            consumer.acknowledge(m)
    consumer.close()  # stores the ledger, then acknowledges on the broker
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        again = raw.subscribe(topic, "part", consumer_type=pulsar.ConsumerType.Exclusive)
        assert {f"v{i}" for i in range(10, 30)} <= set(nothing_more(again, within=5.0))
    finally:
        raw.close()


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
