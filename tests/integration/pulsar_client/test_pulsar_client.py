"""The Pulsar facade on the reference cluster: identity, the ledger filter, a switch."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, acknowledge_until, nothing_more, produce_values, take
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


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
        first = take(again, 1)[0]  # a subscription's first message may take seconds
        assert [first.data().decode(), *nothing_more(again, within=1.5)] == [got[10].data().decode()]
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
        acknowledge_until(again, {f"v{i}" for i in range(10, 30)}, timeout=30)  # fails if one is gone
    finally:
        raw.close()
