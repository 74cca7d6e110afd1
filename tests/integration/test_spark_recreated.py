"""A query restarted from its checkpoint after the route left its cluster and came back to it,
while the topic there was deleted and created again (a cluster rebuilt empty): the offsets in
the checkpoint name records of the old topic, and the new one is read from its start.

The stream reader's methods are called as Spark's driver calls them, without a Spark session:
what is tested is the planner's choice of positions, which a session would only slow down."""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from hotstandby.spark_integration.options import parse_options
from hotstandby.spark_integration.source import HotStandbyStreamReader
from tests.integration.kafka_helpers import create_topic, produce_values
from tests.integration.test_spark_source import options, replicated
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = [pytest.mark.integration, pytest.mark.apache]


def topic_id(admin: AdminClient, topic: str) -> str | None:
    try:
        return str(admin.describe_topics(TopicCollection([topic]))[topic].result(10).topic_id)
    except KafkaException:
        return None


def recreate(rc: RefCluster, topic: str) -> None:
    """Delete ``topic`` on kafka-a and create it again: a new topic id, an empty log."""
    spec = rc.cluster_spec("kafka-a")
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})
    before = topic_id(admin, topic)
    admin.delete_topics([topic])[topic].result(10)

    def created() -> bool:
        with contextlib.suppress(KafkaException):  # refused while the broker still deletes it
            create_topic(spec, topic, 1)
        # Apache Kafka may have created it again already (a client's metadata request).
        now = topic_id(admin, topic)
        return now is not None and now != before

    wait_for(created, timeout=30, what=f"{topic} created again on kafka-a")


def run_batches(reader: HotStandbyStreamReader, start: dict[str, Any], want: int) -> tuple[list[str], dict[str, Any]]:
    """Plan, read and commit micro-batches from ``start`` until ``want`` rows were read (or a
    deadline passed); the rows' values and the last end."""
    values: list[str] = []
    deadline = time.monotonic() + 60
    limit = reader.getDefaultReadLimit()
    while len(values) < want and time.monotonic() < deadline:
        end = reader.latestOffset(start, limit)
        if end == start:
            time.sleep(0.2)  # a trigger interval: nothing new yet
            continue
        for partition in reader.partitions(start, end):
            for batch in reader.read(partition):
                values.extend(v.decode() for v in batch.to_pydict()["value"])
        reader.commit(end)
        start = end
    return values, start


@pytest.mark.parametrize("flips", [True, False], ids=["route-left-and-came-back", "route-stayed"])
def test_a_query_restarted_on_a_topic_created_again_reads_the_new_topic_from_its_start(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, flips: bool
) -> None:
    topic = f"rc-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    old = [f"old-{i}" for i in range(50)]
    produce_values(refcluster, namespace, topic, old)
    replicated(refcluster, topic, len(old))
    opts = parse_options(options(refcluster, namespace, topic, **{"hotstandby.group": f"q-{topic}", "startingOffsets": "earliest"}),
                         streaming=True)  # fmt: skip

    first = HotStandbyStreamReader(opts)
    try:
        got, checkpoint = run_batches(first, first.initialOffset(), len(old))
    finally:
        first.stop()
    assert sorted(got) == sorted(old)

    # While the query is down the topic on kafka-a is created again (the route leaving kafka-a
    # meanwhile and coming back, or not); the new topic grows past the checkpoint's position.
    if flips:
        center.switch("orders", "kafka-b", reason="test: kafka-a rebuilt")
    recreate(refcluster, topic)
    if flips:
        center.switch("orders", "kafka-a", reason="test: back on kafka-a")
    new = [f"new-{i}" for i in range(80)]
    produce_values(refcluster, namespace, topic, new)

    again = HotStandbyStreamReader(opts)
    try:
        got, _ = run_batches(again, checkpoint, len(new))
    finally:
        again.stop()
    assert sorted(got) == sorted(new), "every record of the new topic once, none of the old one"
