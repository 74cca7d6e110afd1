"""The Kafka consumer facade as a confluent-kafka user sees it: no SDK header in messages, no
error events for remote copies it never named, pause kept across a switch, pass-throughs that
answer for the cluster in use (docs/kafka-api.md)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config


def poll_until(consumer: Consumer, count: int, timeout: float, events: list[Message]) -> list[Message]:
    """Poll until ``count`` records arrived (fails after ``timeout``); error events go to ``events``."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} records within {timeout} s"
        msg = consumer.poll(0.2)
        if msg is not None:
            (events if msg.error() is not None else got).append(msg)
    return got


def test_messages_carry_only_the_applications_headers_and_no_copy_errors(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """``orders`` exists on kafka-a only, so its copy ``kafka-b.orders`` does not exist there."""
    topic = f"h-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    producer = Producer(route_config(refcluster, namespace))
    try:
        producer.produce(topic, value=b"plain", partition=0)
        producer.produce(topic, value=b"tagged", partition=0, headers=[("app", b"1")])
        assert producer.flush(30) == 0
    finally:
        producer.close()
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}))
    events: list[Message] = []
    try:
        consumer.subscribe([topic])
        plain, tagged = poll_until(consumer, 2, 30, events)
        copy_errors = [m for m in events if "kafka-b." in f"{m.topic()} {m.error()}"]
        assert copy_errors == [], f"error events of a copy the application never named: {copy_errors}"
        assert [m for m in events if m.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART] == []
        assert plain.headers() is None, "no header of the application's: None, as confluent-kafka"
        assert tagged.headers() == [("app", b"1")]
        assert all(HEADER not in dict(m.headers() or []) for m in (plain, tagged))
        assert getattr(plain, "hs_id", None) is not None, "the identity stays on the message"
        # Pass-throughs answer for kafka-a.
        assert consumer.list_topics(topic, timeout=10).topics[topic].error is None
        assert consumer.memberid(), "a member of the group on kafka-a"
        assert consumer.position([TopicPartition(topic, 0)]) == [TopicPartition(topic, 0, 2)]
    finally:
        consumer.close()


def test_a_paused_partition_stays_paused_across_a_switch(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"p-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    produce_values(refcluster, namespace, topic, ["a0", "a1"])
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "auto.commit.interval.ms": 200}))  # fmt: skip
    events: list[Message] = []
    try:
        consumer.subscribe([topic])
        assert sorted(m.value() for m in poll_until(consumer, 2, 30, events)) == [b"a0", b"a1"]
        consumer.pause([TopicPartition(topic, 0)])
        center.switch("orders", "kafka-b", reason="test")
        produce_values(refcluster, namespace, topic, ["b0", "b1"])  # the producer follows: on kafka-b
        handed: list[Message] = []
        deadline = time.monotonic() + 30
        # Until the group on kafka-b assigned the partition, and one second more: nothing comes.
        while not (consumer.cluster == "kafka-b" and consumer.assignment()):
            assert time.monotonic() < deadline, "no assignment on kafka-b within 30 s"
            handed += [m for m in [consumer.poll(0.1)] if m is not None and m.error() is None]
        settle = time.monotonic() + 1.0
        while time.monotonic() < settle:
            handed += [m for m in [consumer.poll(0.1)] if m is not None and m.error() is None]
        assert handed == [], "a paused partition hands nothing out on the new cluster"
        assert consumer.list_topics(timeout=10).cluster_id == consumer.cluster_id(10)
        consumer.resume([TopicPartition(topic, 0)])
        assert sorted(m.value() for m in poll_until(consumer, 2, 30, events)) == [b"b0", b"b1"]
    finally:
        consumer.close()


def test_auto_offset_reset_error_stops_at_the_applications_partitions_not_their_copies(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """With ``auto.offset.reset=error`` a partition the application placed is read; its remote
    copy, which it cannot place, is read from its beginning instead of raising
    ``_AUTO_OFFSET_RESET`` (confluent-kafka's own test_incremental_assign)."""
    topic = f"r-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):  # the topic on both: each has the other's copy
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    produce_values(refcluster, namespace, topic, ["a", "b"])
    consumer = Consumer(route_config(refcluster, namespace, **{
        "group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False, "auto.offset.reset": "error"}))  # fmt: skip
    events: list[Message] = []
    try:
        consumer.incremental_assign([TopicPartition(topic, 0, 0)])
        got = poll_until(consumer, 2, 30, events)
        assert [m.value() for m in got] == [b"a", b"b"]
        deadline = time.monotonic() + 5  # the copy's reset comes from librdkafka's fetcher
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            assert msg is None or msg.error() is None, f"handed out: {msg.error() if msg else None}"
    finally:
        consumer.close()
    assert [m.error() for m in events if m.error().code() == KafkaError._AUTO_OFFSET_RESET] == []


def test_committed_answers_for_a_topic_the_consumer_does_not_read(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"q-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}))
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        assert consumer.committed([TopicPartition(topic, 0)], timeout=10) == [TopicPartition(topic, 0, 3)]
    finally:
        consumer.close()


def test_a_synchronous_commit_is_read_back_at_once_with_its_metadata(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """As confluent-kafka's: ``committed()`` right after ``commit(asynchronous=False)`` shows the
    offset and, on Apache Kafka (Tansu keeps none), the metadata given with it; metadata with a
    NUL is refused first."""
    topic = f"m-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}))
    metadata: list[str | None] = [None, "hello world", "नमस्ते दुनिया", ""]
    if refcluster.brokers != "apache":
        metadata = [None] * len(metadata)
    try:
        for offset, given in enumerate(metadata, start=1):
            tp = TopicPartition(topic, 0, offset) if given is None else TopicPartition(topic, 0, offset, given)
            consumer.commit(offsets=[tp], asynchronous=False)
            shown = consumer.committed([TopicPartition(topic, 0)], timeout=10)
            assert [(tp.offset, tp.metadata or None) for tp in shown] == [(offset, given or None)]
        # The same offset again, with other metadata: read back too.
        if refcluster.brokers == "apache":
            consumer.commit(offsets=[TopicPartition(topic, 0, 4, "again")], asynchronous=False)
            assert [tp.metadata for tp in consumer.committed([TopicPartition(topic, 0)], timeout=10)] == ["again"]
        with pytest.raises(ValueError, match="embedded null character"):
            consumer.commit(offsets=[TopicPartition(topic, 0, 9, "xyz\x00abc")], asynchronous=False)
        assert [tp.offset for tp in consumer.committed([TopicPartition(topic, 0)], timeout=10)] == [4]
    finally:
        consumer.close()
