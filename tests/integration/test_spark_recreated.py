"""A query restarted from its checkpoint after the route left its cluster and came back to it,
while the topic there was deleted and created again (a cluster rebuilt empty): the offsets in
the checkpoint name records of the old topic; what the old topic held past them is read from
its copies on kafka-b, and the new one from its start.

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
from hotstandby.spark_integration.source.options import parse_options
from hotstandby.spark_integration.source.source import HotStandbyStreamReader
from tests.integration.kafka_helpers import create_topic, produce_values, read_all, topics
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
def test_a_query_restarted_on_a_topic_created_again_reads_the_old_tail_elsewhere_then_the_new_topic(
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

    # While the query is down the old topic grows past the checkpoint (copied to kafka-b), then
    # is created again on kafka-a (the route leaving kafka-a meanwhile and coming back, or
    # not); the new topic grows past the checkpoint's position.
    tail = [f"tail-{i}" for i in range(30)]
    produce_values(refcluster, namespace, topic, tail)
    replicated(refcluster, topic, len(old) + len(tail))
    if flips:
        center.switch("orders", "kafka-b", reason="test: kafka-a rebuilt")
    recreate(refcluster, topic)
    if flips:
        center.switch("orders", "kafka-a", reason="test: back on kafka-a")
    new = [f"new-{i}" for i in range(80)]
    produce_values(refcluster, namespace, topic, new)

    again = HotStandbyStreamReader(opts)
    try:
        got, _ = run_batches(again, checkpoint, len(tail) + len(new))
    finally:
        again.stop()
    assert sorted(got) == sorted(tail + new), "the old topic's tail (its copies on kafka-b), then the new topic, once"


def read_batch(reader: HotStandbyStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[str]:
    """The batch from ``start`` to ``end`` as Spark's executors read it: its values, task by task."""
    return [v.decode() for p in reader.partitions(start, end) for b in reader.read(p) for v in b.to_pydict()["value"]]


def copied_to_a(rc: RefCluster, topic: str, count: int) -> None:
    """Wait until kafka-a holds ``count`` records of kafka-b's ``topic`` (``kafka-b.<topic>``)."""
    spec = rc.cluster_spec("kafka-a")

    def copied() -> bool:
        return f"kafka-b.{topic}" in topics(spec) and len(read_all(spec, f"kafka-b.{topic}", 0)) >= count

    wait_for(copied, timeout=60, what=f"{count} copies of kafka-b's {topic} on kafka-a")


def test_a_batch_run_again_after_its_topic_was_created_again_emits_its_first_run_in_order(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A driver restarted before it committed a batch runs the batch again; meanwhile the batch's
    cluster lost its records (rebuilt empty, the topic created again and written anew). The run
    again emits what the first run emitted, in the same order (writers name rows by position),
    from the copies on the other cluster, and none of the new topic's records at those offsets."""
    topic = f"rr-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    # Records of both origins on kafka-a (the topic and kafka-b's copy), so the batch's task
    # reads two ranges there, which sit in other topics on kafka-b.
    center.switch("orders", "kafka-b", reason="test: records written on kafka-b")
    from_b = [f"b-{i}" for i in range(30)]
    produce_values(refcluster, namespace, topic, from_b)
    copied_to_a(refcluster, topic, len(from_b))
    center.switch("orders", "kafka-a", reason="test: back on kafka-a")
    from_a = [f"a-{i}" for i in range(40)]
    produce_values(refcluster, namespace, topic, from_a)
    replicated(refcluster, topic, len(from_a))
    opts = parse_options(options(refcluster, namespace, topic, **{"hotstandby.group": f"q-{topic}", "startingOffsets": "earliest"}),
                         streaming=True)  # fmt: skip

    first = HotStandbyStreamReader(opts)
    try:
        start = first.initialOffset()
        end = first.latestOffset(start, first.getDefaultReadLimit())
        emitted = read_batch(first, start, end)
    finally:
        first.stop()  # the driver dies before Spark commits the batch
    assert sorted(emitted) == sorted(from_b + from_a)

    recreate(refcluster, topic)
    new = [f"new-{i}" for i in range(80)]
    produce_values(refcluster, namespace, topic, new)

    again = HotStandbyStreamReader(opts)
    try:
        assert read_batch(again, start, end) == emitted, "the batch run again emits its first run, in order"
        again.commit(end)
        got, _ = run_batches(again, end, len(new))
    finally:
        again.stop()
    assert sorted(got) == sorted(new), "then the new topic, from its start"
