"""A failback to a Kafka cluster that came back empty: what the group had not read yet of that
cluster's records exists only in their copies on the survivor (MirrorMaker 2 copies nothing of
``kafka-a.orders`` back to kafka-a), so the consumer reads them there before it moves, however
long that takes past the drain timeout."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable

import pytest

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config, wait_copied

# A restarted Tansu broker keeps nothing (memory storage); Apache Kafka keeps its log.
pytestmark = pytest.mark.lite_only


def test_a_consumer_lagging_at_a_failback_to_an_emptied_cluster_reads_its_records_on_the_survivor(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"fe-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    values = [f"v{i}" for i in range(400)]
    produce_values(refcluster, namespace, topic, values)
    wait_copied(refcluster, topic, 2, len(values))
    config = route_config(
        refcluster,
        namespace,
        **{
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "hotstandby.drain.timeout.ms": 1,
        },
    )
    consumer = Consumer(config)
    got: list[str] = []

    def pump(done: Callable[[], bool], timeout: float, what: str) -> None:
        """Read, committing every record, until ``done``."""
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"{what} within {timeout} s: {len(set(values) - set(got))} missing"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
                consumer.commit(message=msg, asynchronous=False)

    try:
        consumer.subscribe([topic])
        pump(lambda: len(got) >= 50, 60, "50 records")
        refcluster.kill("kafka-a", signal.SIGKILL)
        center.switch("orders", "kafka-b", reason="kafka-a lost")
        pump(lambda: consumer.cluster == "kafka-b" and len(got) >= 100, 60, "50 more on kafka-b")
        refcluster.restart("kafka-a")  # empty: kafka-b's copies are the only ones left
        center.switch("orders", "kafka-a", reason="failback")
        # Most of the copies are still unread at the flip: they are read on kafka-b first.
        pump(lambda: consumer.cluster == "kafka-a" and set(values) <= set(got), 120, "every record and the failback")
        assert sorted(got) == sorted(values), "duplicated"
    finally:
        consumer.close()
