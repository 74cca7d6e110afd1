"""A remote copy created after the consumer holds partitions (the replicator creates a new topic's
copy at its next topic refresh, which may come after a switch): its records are read soon, not
at librdkafka's periodic metadata refresh five minutes later."""

from __future__ import annotations

import time
import uuid

import pytest

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.kafka_helpers import producer as raw_producer

pytestmark = pytest.mark.apache


def test_a_copy_created_while_the_consumer_holds_partitions_is_read_within_seconds(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"lc-{uuid.uuid4().hex[:8]}"
    copy = f"kafka-b.{topic}"  # on kafka-a; the topic is not on kafka-b, so no replicator makes it
    spec = refcluster.cluster_spec("kafka-a")
    create_topic(spec, topic, 1)
    config = route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"})
    consumer = Consumer(config)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment within 60 s"
            consumer.poll(0.2)
        create_topic(spec, copy, 1)
        producer = raw_producer(spec)
        producer.produce(copy, b"late")
        assert producer.flush(30) == 0
        # librdkafka alone looks for the copy again after topic.metadata.refresh.interval.ms (5 min).
        got, deadline = None, time.monotonic() + 30
        while got is None:
            assert time.monotonic() < deadline, "the copy's record was not read within 30 s"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got = msg
    finally:
        consumer.close()
    assert (got.topic(), got.value()) == (topic, b"late"), "handed out under its logical topic"
