"""confluent-kafka code run unchanged on the Kafka facades, on the reference cluster: the
producer's batch and metadata methods and the consumer's pass-throughs answer for the cluster in
use, before and after a switch (docs/kafka-api.md)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.kafka_reading import consume_all, consume_until


class TaggingProducer:
    """A wrapper in the style of confluent-kafka's serializing clients: it asks the client for
    the cluster id when it is made."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.cluster = producer.cluster_id(10)

    def send_batch(self, topic: str, values: list[str], reports: list[tuple[KafkaError | None, Message]]) -> int:
        def report(err: KafkaError | None, msg: Message) -> None:
            reports.append((err, msg))

        batch = [{"value": v.encode(), "key": v.encode(), "callback": report} for v in values]
        queued: int = self.producer.produce_batch(topic, batch)
        return queued


def broker_ports(metadata: Any) -> set[int]:
    return {b.port for b in metadata.brokers.values()}


def cluster_id(spec: ClusterSpec) -> str | None:
    found: str | None = AdminClient({"bootstrap.servers": spec.url}).list_topics(timeout=10).cluster_id
    return found


def test_batches_metadata_and_pass_throughs_answer_for_the_cluster_in_use_across_a_switch(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"d-{uuid.uuid4().hex[:8]}"
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    for spec in (a, b):
        create_topic(spec, topic, 2)
    reports: list[tuple[KafkaError | None, Message]] = []
    producer = Producer(route_config(refcluster, namespace))
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "auto.commit.interval.ms": 200}))  # fmt: skip
    try:
        tagging = TaggingProducer(producer)
        assert tagging.cluster == cluster_id(a)
        assert broker_ports(producer.list_topics(timeout=10)) == {int(a.url.rsplit(":", 1)[1])}
        first = [f"a{i}" for i in range(20)]
        assert tagging.send_batch(topic, first, reports) == 20
        assert producer.flush(30) == 0
        consumer.subscribe([topic])
        got = consume_all(consumer, set(first))
        before_switch = time.time()
        assert consumer.consumer_group_metadata() is not None
        member_on_a = consumer.memberid()
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] + \
            consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=10)[1] == 20  # fmt: skip

        center.switch("orders", "kafka-b", reason="test")
        second = [f"b{i}" for i in range(20)]
        assert tagging.send_batch(topic, second, reports) == 20  # the producer follows: on kafka-b
        assert producer.flush(60) == 0
        got += consume_all(consumer, set(second), timeout=120)
        got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        assert producer.cluster == consumer.cluster == "kafka-b"
        assert producer.cluster_id(10) == consumer.cluster_id(10) == cluster_id(b)
        assert broker_ports(producer.list_topics(timeout=10)) == {int(b.url.rsplit(":", 1)[1])}
        assert broker_ports(consumer.list_topics(timeout=10)) == {int(b.url.rsplit(":", 1)[1])}
        assert consumer.memberid() not in (None, "", member_on_a), "a member of kafka-b's group"
        # kafka-b's own topic: records produced there, and what the replay re-sent (records
        # replication had copied are not re-sent: how many land here depends on timing).
        marks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(2)]
        assert 0 < sum(high for _, high in marks) <= 40
        found = consumer.offsets_for_times([TopicPartition(topic, p, int(before_switch * 1000)) for p in range(2)],
                                           timeout=10)  # fmt: skip
        assert all(0 <= tp.offset <= high for tp, (_, high) in zip(found, marks, strict=True))
    finally:
        producer.close()
        consumer.close()
    assert sorted(got) == sorted(first + second), "lost or duplicated"
    assert len(reports) == 40 and all(err is None for err, _ in reports), "one report per record"
    assert sorted(m.value().decode() for _, m in reports) == sorted(first + second)
