"""Partitions and positions the application sets on the Kafka consumer facade — ``assign``,
``seek``, ``commit(offsets=...)`` — on the reference cluster, across a switch
(docs/kafka-api.md)."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Message, TopicPartition

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import (
    create_topic,
    produce_all,
    produce_values,
    route_config,
    wait_copied,
    wait_synced,
)
from tests.integration.kafka_helpers import producer as raw_producer
from tests.integration.kafka_reading import consume, consume_all, consume_until, hold, no_more


def test_a_manual_assignment_moves_with_the_route_without_loss_or_duplicates(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"m-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    before = [f"a{i}" for i in range(300)]
    produce_values(refcluster, namespace, topic, before)
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "auto.commit.interval.ms": 200}))  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)])
        assert consumer.assignment() == [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)]
        got = consume(consumer, 150)
        consumer.commit(asynchronous=False)
        wait_copied(refcluster, topic, 2, len(before))
        wait_synced(refcluster, topic, 2)  # written once the copies were acknowledged
        center.switch("orders", "kafka-b", reason="test")
        after = [f"b{i}" for i in range(100)]
        produce_values(refcluster, namespace, topic, after)  # the producer follows the route: on kafka-b
        got += consume_all(consumer, set(before + after) - set(got), timeout=120)
        # kafka-b's records may all come through kafka-a's copy before the switch completes.
        got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        assert {(tp.topic, tp.partition) for tp in consumer.assignment()} == {(topic, 0), (topic, 1)}
        assert no_more(consumer) == []
        assert consumer.filtered < 300, "translated start positions on kafka-b, not the beginning"
        consumer.unassign()
        assert consumer.assignment() == []
    finally:
        consumer.close()
    assert sorted(got) == sorted(before + after), "lost or duplicated"


def test_positions_taken_from_messages_of_a_remote_copy_name_the_copy(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """On kafka-a, ``t`` holds kafka-a's records and ``kafka-b.t`` the copies of kafka-b's;
    messages of both say ``t``. A commit or seek built from a copy's message (its topic() and
    offset()) must act on the copy, not on ``t`` at the same offset."""
    topic = f"k-{uuid.uuid4().hex[:8]}"
    copy = f"kafka-b.{topic}"
    a = refcluster.cluster_spec("kafka-a")
    for name in (topic, copy):
        create_topic(a, name, 1)
    # kafka-b's records as the replicator leaves them on kafka-a (written there directly).
    produce_all(raw_producer(a), [{"topic": copy, "value": f"b{i}".encode(), "partition": 0} for i in range(40)])
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "enable.auto.commit": False}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        copies = hold(consumer, 30)
        assert {getattr(m, "physical_topic", None) for m in copies} == {copy}
        last = copies[-1]
        assert last.topic() == topic and last.offset() == 29
        # The confluent-kafka way of committing a message: its topic, partition, offset + 1.
        consumer.commit(offsets=[TopicPartition(last.topic(), last.partition(), last.offset() + 1)],
                        asynchronous=False)  # fmt: skip
        # kafka-a's own records now land at offsets 0..4 of t, below that offset.
        produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(5)])
        rest = consume_all(consumer, {f"a{i}" for i in range(5)} | {f"b{i}" for i in range(30, 40)}, timeout=60)
        assert sorted(rest) == sorted([f"a{i}" for i in range(5)] + [f"b{i}" for i in range(30, 40)])
        # Seek back to a copy's message not committed: it and what follows come again.
        consumer.seek(TopicPartition(topic, 0, 35))
        again = consume(consumer, 5)
        assert again == [f"b{i}" for i in range(35, 40)], "the copy's records from offset 35, not t's"
        assert no_more(consumer, within=2.0) == []
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert {(tp.topic, tp.offset) for tp in committed} >= {(copy, 30)}
        assert (topic, 30) not in {(tp.topic, tp.offset) for tp in committed}
    finally:
        consumer.close()


def test_assign_in_on_assign_sets_where_the_group_partitions_start(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"o-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    produce_values(refcluster, namespace, topic, [f"old{i}" for i in range(20)])
    assigned: list[list[TopicPartition]] = []

    def from_the_end(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.append(partitions)
        consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_END) for tp in partitions])

    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}))
    try:
        consumer.subscribe([topic], on_assign=from_the_end)
        deadline = time.monotonic() + 60
        handed: list[Message] = []
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment within 60 s"
            handed += [m for m in [consumer.poll(0.2)] if m is not None and m.error() is None]
        assert handed == [], "the application's on_assign started the partitions at their end"
        assert [tp.topic for tp in assigned[0]] == [topic, topic]
        new = [f"new{i}" for i in range(10)]
        produce_values(refcluster, namespace, topic, new)
        assert sorted(consume(consumer, 10)) == sorted(new)
        assert no_more(consumer, within=2.0) == []
    finally:
        consumer.close()


def test_a_cooperative_group_moves_with_the_route(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> None:
    """``cooperative-sticky`` assigns incrementally: the SDK's own assignments in the rebalance
    callbacks (start positions after a switch, pauses) must use incremental_assign there."""
    topic = f"c-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    before = [f"a{i}" for i in range(100)]
    produce_values(refcluster, namespace, topic, before)
    consumer = Consumer(route_config(refcluster, namespace, **{
        "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.commit.interval.ms": 200,
        "partition.assignment.strategy": "cooperative-sticky",
    }))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 50)
        consumer.commit(asynchronous=False)
        center.switch("orders", "kafka-b", reason="test")
        after = [f"b{i}" for i in range(50)]
        produce_values(refcluster, namespace, topic, after)
        got += consume_all(consumer, set(before + after) - set(got), timeout=120)
        # kafka-b's records may all come through kafka-a's copy before the switch completes.
        got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        assert no_more(consumer) == []
    finally:
        consumer.close()
    assert sorted(got) == sorted(before + after), "lost or duplicated"
