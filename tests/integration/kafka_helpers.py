"""Reading and writing the reference Kafka brokers in integration tests."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from hotstandby.adapters.kafka import Producer as SdkProducer
from hotstandby.adapters.kafka.mm2.codec import OffsetSync
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.refcluster import RefCluster
from tests.support import wait_for


def route_config(rc: RefCluster, namespace: str, **extra: Any) -> dict[str, Any]:
    """A facade's configuration for route ``orders`` in ``namespace`` of the reference cluster
    (as its ``app`` user when the cluster is secure)."""
    return {**rc.client_config("app"), "hotstandby.route": "orders", "hotstandby.namespace": namespace, **extra}


def produce_values(rc: RefCluster, namespace: str, topic: str, values: list[str]) -> None:
    """Write ``values`` (also as keys) through an SDK Producer on route ``orders``."""
    producer = SdkProducer(route_config(rc, namespace))
    try:
        for v in values:
            producer.produce(topic, key=v, value=v)
        assert producer.flush(60) == 0
    finally:
        producer.close()


def create_topic(spec: ClusterSpec, topic: str, partitions: int) -> None:
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(10)


def producer(spec: ClusterSpec, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": spec.url, **spec.client_config("producer"), **extra})


def produce_all(p: Producer, records: list[dict[str, Any]]) -> None:
    for r in records:
        while True:
            try:
                p.produce(**r)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def read_partition(
    spec: ClusterSpec, topic: str, partition: int, *, until: int, timeout: float = 60.0
) -> list[Message]:
    """Records of one partition from the beginning until ``until`` records were read (or fail)."""
    consumer = Consumer({"bootstrap.servers": spec.url, "group.id": "__hs-test-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        out: list[Message] = []
        deadline = time.monotonic() + timeout
        while len(out) < until and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None and err.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise AssertionError(f"reading {topic}[{partition}]: {err}")
            if err is None:
                out.append(msg)
        assert len(out) >= until, f"{topic}[{partition}]: {len(out)} of {until} records within {timeout} s"
        return out
    finally:
        consumer.close()


def topics(spec: ClusterSpec) -> set[str]:
    return set(AdminClient({"bootstrap.servers": spec.url}).list_topics(timeout=10).topics)


def read_all(spec: ClusterSpec, topic: str, partition: int, *, timeout: float = 30.0) -> list[Message]:
    """Every record of one partition up to the high watermark at the time of the call."""
    consumer = Consumer({"bootstrap.servers": spec.url, "group.id": "__hs-test-reader", "enable.auto.commit": False})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, 0)])
        out: list[Message] = []
        deadline = time.monotonic() + timeout
        while len(out) < high:
            assert time.monotonic() < deadline, f"{topic}[{partition}]: {len(out)} of {high} within {timeout} s"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                out.append(msg)
        return out
    finally:
        consumer.close()


def wait_copied(rc: RefCluster, topic: str, partitions: int | None, count: int, *, timeout: float = 60.0) -> None:
    """Wait until kafka-b holds ``count`` records of kafka-a's ``topic`` (MM2's copy ``kafka-a.<topic>``)
    in its ``partitions`` (None: all it has): what a test of translation needs before it
    switches, as MM2 copies and syncs only then."""
    consumer = Consumer({"bootstrap.servers": rc.cluster_spec("kafka-b").url, "group.id": "__hs-test-reader"})
    copy = f"kafka-a.{topic}"
    seen: list[object] = []

    def copied() -> bool:
        try:
            # Asked by name each time: librdkafka keeps a topic first seen half-created (no
            # partitions yet) in its metadata cache until the next periodic refresh (5 min).
            meta = consumer.list_topics(copy, timeout=5).topics.get(copy)
            if meta is None or meta.error is not None:
                seen[:] = [f"{copy}: {meta.error if meta else 'absent'}"]
                return False
            # A copy just created answers NOT_LEADER_FOR_PARTITION until its leader is elected.
            ends = [consumer.get_watermark_offsets(TopicPartition(copy, p), timeout=5)[1]
                    for p in (range(partitions) if partitions is not None else meta.partitions)]  # fmt: skip
        except KafkaException as exc:
            seen[:] = [str(exc)]
            return False
        seen[:] = ends
        return sum(ends) >= count

    try:
        wait_for(copied, timeout, f"{count} records of {topic} copied to kafka-b")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the copy's ends last seen: {seen}") from None
    finally:
        consumer.close()


def wait_synced(rc: RefCluster, topic: str, partitions: int, *, timeout: float = 60.0) -> None:
    """Wait until kafka-a holds MM2's offset syncs (flow kafka-a -> kafka-b) for every partition
    of ``topic``: the replicator writes them once kafka-b acknowledged the copies, so a test
    that needs translated positions at a planned switch waits for them after ``wait_copied``."""
    a = rc.cluster_spec("kafka-a")

    def synced() -> bool:
        try:
            found = {OffsetSync.decode(m.key() or b"", m.value() or b"")
                     for m in read_all(a, "mm2-offset-syncs.kafka-b.internal", 0)}  # fmt: skip
        except KafkaException:  # the syncs topic is created with the first sync
            return False
        return {s.partition for s in found if s.topic == topic} >= set(range(partitions))

    wait_for(synced, timeout, f"offset syncs of {topic} on kafka-a")


def logical_topic_with_twins(
    rc: RefCluster, center: Any, namespace: str, topic: str, *, before: int, after: int, twins: int
) -> list[str]:
    """``topic`` (two partitions on both clusters of route ``orders``) with ``before`` records
    written on kafka-a and copied to kafka-b, a flip to kafka-b, ``after`` records written
    there, and ``twins`` re-sent twins of the copies (records of ``kafka-a.<topic>`` written
    again, identity and all, to ``topic`` on kafka-b, as a producer's re-send makes them).
    Returns the values of the logical stream, each once."""
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(rc.cluster_spec(cluster), topic, 2)
    first = [f"a{i}" for i in range(before)]
    produce_values(rc, namespace, topic, first)
    wait_copied(rc, topic, None, len(first))
    center.switch("orders", "kafka-b", reason="test")
    then = [f"b{i}" for i in range(after)]
    produce_values(rc, namespace, topic, then)
    b = rc.cluster_spec("kafka-b")
    copies = read_all(b, f"kafka-a.{topic}", 0)[:twins]
    assert len(copies) == twins, f"only {len(copies)} copies to re-send"
    produce_all(producer(b), [{"topic": topic, "partition": 0, "key": m.key(), "value": m.value(),
                               "headers": m.headers()} for m in copies])  # fmt: skip
    return first + then
