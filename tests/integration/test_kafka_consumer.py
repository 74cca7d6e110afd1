"""The Kafka consumer facade: exact filtering by the ack ledger, across a restart and a switch."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switching import SwitchState
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config, wait_copied, wait_synced
from tests.integration.kafka_helpers import producer as raw_producer
from tests.integration.kafka_reading import consume, consume_all, consume_until, hold, no_more
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def test_restart_without_a_switch_filters_what_was_committed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"c-{uuid.uuid4().hex[:8]}"
    a = refcluster.cluster_spec("kafka-a")
    create_topic(a, topic, 2)
    values = [f"r{i}" for i in range(200)]
    produce_values(refcluster, namespace, topic, values)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = Consumer(route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False}))
    try:
        first.subscribe([topic])
        seen = consume(first, 120)
        first.commit(asynchronous=False)
    finally:
        first.close()
    # Lose the broker's committed offsets (as after an offsets-topic loss or a reset by mistake):
    # the ledger alone must keep acknowledged records from being delivered again.
    admin = AdminClient({"bootstrap.servers": a.url})
    reset = [TopicPartition(topic, p, 0) for p in range(2)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, reset)])[group].result(10)
    second = Consumer(route_config(refcluster, namespace, **{"group.id": group}))
    try:
        second.subscribe([topic])
        rest = consume(second, 80)
        assert no_more(second) == []
        assert second.filtered >= 120
    finally:
        second.close()
    assert sorted(seen + rest) == sorted(values), "lost or duplicated"
    assert not set(seen) & set(rest)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_switch_mid_stream_loses_nothing_and_delivers_nothing_twice(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, protocol: str
) -> None:
    """With either group protocol: the classic one, or KIP-848's (``group.protocol=consumer``,
    where the broker assigns the partitions incrementally)."""
    if protocol == "consumer" and refcluster.brokers != "apache":
        pytest.skip("the lite Kafka broker (Tansu) has no KIP-848 groups")
    topic = f"s-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    before = [f"a{i}" for i in range(300)]
    produce_values(refcluster, namespace, topic, before)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200,
                                                               "group.protocol": protocol}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 150)
        consumer.commit(asynchronous=False)
        wait_copied(refcluster, topic, 2, len(before))
        wait_synced(refcluster, topic, 2)  # written once the copies were acknowledged
        center.switch("orders", "kafka-b", reason="test")
        after = [f"b{i}" for i in range(100)]
        produce_values(refcluster, namespace, topic, after)  # the producer follows the route: on kafka-b
        got += consume(consumer, 250, timeout=120)
        got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        # Started on kafka-b at translated positions (MM2 checkpoints for the copies, reverse
        # offset syncs for kafka-b's own records read on kafka-a): whatever is read again is
        # filtered, nothing is delivered twice.
        got += consume_until(consumer, lambda: len(consumer.assignment()) > 0)
        assert no_more(consumer) == []
        assert consumer.filtered < 300, "translated start positions, not the beginning"
    finally:
        consumer.close()
    assert sorted(got) == sorted(before + after), "lost or duplicated"
    assert len(got) == len(set(got))


def test_planned_switch_drains_the_old_cluster_first(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """With replication stopped, records only on kafka-a are still consumed, before the move."""
    topic = f"d-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    replicator = "mirror-kafka-a-to-kafka-b"
    values = [f"r{i}" for i in range(200)]
    group = f"g-{uuid.uuid4().hex[:6]}"
    refcluster.kill(replicator, signal.SIGTERM)
    try:
        produce_values(refcluster, namespace, topic, values)
        consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200}))
        try:
            consumer.subscribe([topic])
            got = consume(consumer, 50)
            center.switch("orders", "kafka-b", reason="test")
            # The application is busy: without a drain the consumer would move on without it.
            wait_for(lambda: consumer.switch_state is not SwitchState.ACTIVE or consumer.cluster == "kafka-b",
                     10, "the switch to start")  # fmt: skip
            got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
            assert sorted(got) == sorted(values), "the drain must consume what only kafka-a holds"
        finally:
            consumer.close()
    finally:
        refcluster.restart(replicator)


def test_a_copy_arriving_before_the_original_is_acknowledged_is_not_handed_out_again(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A re-sent record and its replicated copy can both reach a member before the ledger holds
    either (auto commit stores it up to an interval later): the second is the same record."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    a = refcluster.cluster_spec("kafka-a")
    for name in (topic, f"kafka-b.{topic}"):
        create_topic(a, name, 1)
    raw = raw_producer(a)
    ids = [RecordId(b"\x07" * 16, 0, seq).encode() for seq in range(20)]
    for name in (topic, f"kafka-b.{topic}"):  # the same 20 records in both physical topics
        for seq, rid in enumerate(ids):
            raw.produce(name, value=f"r{seq}".encode(), partition=0, headers=[(HEADER, rid)])
    assert raw.flush(30) == 0
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "auto.commit.interval.ms": 60_000}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 20)
        got += consume_until(consumer, lambda: consumer.filtered >= 20, what=lambda: f"filtered {consumer.filtered}")
        assert no_more(consumer, within=1.0) == []
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"r{i}" for i in range(20))


def test_a_commit_after_the_switch_of_a_record_from_the_old_cluster_moves_no_offset_there(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """An application still holding records of kafka-a commits them once the consumer is on
    kafka-b. The offset names another record there: committing it would skip kafka-b's own
    records. The commit acknowledges the records by identity instead."""
    topic = f"l-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(30)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.subscribe([topic])
        held = hold(consumer, 30)
        consumer.commit(message=held[19], asynchronous=False)
        center.switch("orders", "kafka-b", reason="test")
        early = consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        committed = consumer.commit(message=held[29], asynchronous=False)  # a0..a29: all processed now
        assert (topic, 0, 30) not in {(tp.topic, tp.partition, tp.offset) for tp in committed or []}
        stored = LedgerStore(center).load(group, topic, 0).ledger
        ids = [m.hs_id for m in held]  # type: ignore[attr-defined]  # the facade's messages carry it
        assert all(stored.has(r) for r in ids), "the late commit is stored by identity"
        produce_values(refcluster, namespace, topic, [f"b{i}" for i in range(5)])  # on kafka-b, offsets 0..4
        got = consume_all(consumer, {f"b{i}" for i in range(5)}, timeout=90)  # fails if they were skipped
        got += no_more(consumer)
    finally:
        consumer.close()
    assert set(early) <= {f"a{i}" for i in range(20, 30)}, "only uncommitted records come again"
    assert sorted(got) == [f"b{i}" for i in range(5)], "acknowledged records are filtered after the late commit"


def test_without_auto_commit_only_what_the_application_commits_is_acknowledged(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """As with confluent_kafka: commit(message) covers that message's partition only, and
    neither a switch nor closing commits anything. The uncommitted records come again."""
    topic = f"m-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    values = [f"a{i}" for i in range(40)]
    produce_values(refcluster, namespace, topic, values)
    config = route_config(
        refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    )
    consumer = Consumer(config)
    try:
        consumer.subscribe([topic])
        held = hold(consumer, 40)
        last_of_0 = [m for m in held if m.partition() == 0][-1]
        consumer.commit(message=last_of_0, asynchronous=False)
        committed = {m.value().decode() for m in held if m.partition() == 0}
        center.switch("orders", "kafka-b", reason="test")
        again = consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        again += consume_all(consumer, set(values) - committed - set(again), timeout=90)
        again += no_more(consumer)
    finally:
        consumer.close()
    assert sorted(again) == sorted(set(values) - committed), "exactly the uncommitted records, once"


def test_a_copy_that_appears_later_is_assigned_with_its_topic_partition_by_partition(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A remote copy created once the members are in the group (as the replicator does for a
    new topic) joins their subscription at their next metadata refresh, and each member then
    holds the same partitions of the topic and of the copy: a record there twice (a producer's
    re-sent twin and its copy) reaches one member, whose ledger filters it."""
    if refcluster.brokers != "apache":
        pytest.skip("the lite Kafka broker (Tansu) describes a group without its members' assignments")
    topic = f"cp-{uuid.uuid4().hex[:8]}"
    copy = f"kafka-b.{topic}"
    spec = refcluster.cluster_spec("kafka-a")
    create_topic(spec, topic, 4)
    group = f"g-{uuid.uuid4().hex[:6]}"
    # How often a member looks for topics it subscribed to that were not there: librdkafka's
    # default is 5 minutes, until when the members disagree on what they subscribe to.
    config = {"group.id": group, "topic.metadata.refresh.interval.ms": 5000}
    members = [Consumer(route_config(refcluster, namespace, **config)) for _ in range(2)]
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})

    def assignments() -> list[dict[str, set[int]]]:
        found = admin.describe_consumer_groups([group], request_timeout=5)[group].result(10)
        out = []
        for member in found.members:
            parts: dict[str, set[int]] = {}
            for tp in member.assignment.topic_partitions:
                parts.setdefault(tp.topic, set()).add(tp.partition)
            out.append(parts)
        return out

    def polling_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what} within {timeout} s: {assignments()}"
            for member in members:  # a rebalance needs every member to poll
                member.poll(0.1)

    try:
        for member in members:
            member.subscribe([topic])
        polling_until(lambda: sum(len(a.get(topic, ())) for a in assignments()) == 4 and len(assignments()) == 2,
                      60, "both members share the topic")  # fmt: skip
        create_topic(spec, copy, 4)

        def together() -> bool:
            found = assignments()
            return len(found) == 2 and all(a.get(topic) and a.get(topic) == a.get(copy) for a in found)

        # The member that sees the copy first may get all of it; the other one rejoins once
        # it sees the copy too.
        polling_until(together, 30, "each member holding the same partitions of the topic and the copy")
    finally:
        closing = threading.Thread(target=members[0].close)
        closing.start()
        members[1].close()
        closing.join(60)
