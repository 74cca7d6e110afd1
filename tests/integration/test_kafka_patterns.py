"""Kafka pattern subscriptions (``^...``, as confluent-kafka): the topics a pattern matches,
and on a cluster holding MM2-style remote copies (``kafka-a.<topic>``) the copies of those
topics, handed out under the topic's own name."""

from __future__ import annotations

import uuid

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config, wait_copied
from tests.integration.kafka_helpers import produce_values as produce
from tests.integration.kafka_reading import hold, no_more


def test_a_pattern_subscription_reads_matching_topics_and_their_remote_copies(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    stem = f"rx{uuid.uuid4().hex[:6]}"
    topics = [f"{stem}-1", f"{stem}-2"]
    for cluster in ("kafka-a", "kafka-b"):
        for topic in topics:
            create_topic(refcluster.cluster_spec(cluster), topic, 1)
    create_topic(refcluster.cluster_spec("kafka-a"), f"other{stem}", 1)  # matches no pattern
    for topic in topics:
        produce(refcluster, namespace, topic, [f"{topic}:a{i}" for i in range(10)])
    produce(refcluster, namespace, f"other{stem}", ["not wanted"])
    group = f"g-{uuid.uuid4().hex[:6]}"
    config = route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False})
    first = Consumer(config)
    try:
        first.subscribe([f"^{stem}-.*"])
        got = hold(first, 20)
        first.commit(asynchronous=False)
        assert no_more(first, within=1.0) == []
    finally:
        first.close()
    assert sorted(m.value().decode() for m in got) == sorted(f"{t}:a{i}" for t in topics for i in range(10))
    assert {m.topic() for m in got} == set(topics)
    # Ten more each on kafka-a, then kafka-b holds all of them as remote copies only.
    for topic in topics:
        produce(refcluster, namespace, topic, [f"{topic}:b{i}" for i in range(10)])
    for topic in topics:
        wait_copied(refcluster, topic, 1, 20)
    center.switch("orders", "kafka-b", reason="test")
    second = Consumer(config)
    try:
        second.subscribe([f"^{stem}-.*"])
        later = hold(second, 20)
        second.commit(asynchronous=False)
        assert no_more(second) == [], "copies of committed records, handed out again"
        assert second.cluster == "kafka-b"
    finally:
        second.close()
    assert sorted(m.value().decode() for m in later) == sorted(f"{t}:b{i}" for t in topics for i in range(10))
    assert {m.topic() for m in later} == set(topics), "a remote copy is handed out under its topic's name"
