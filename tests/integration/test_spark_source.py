"""The ``hotstandby`` Spark data source on a real local Spark session and the reference cluster:
batch reads with dedupe, and a streaming query across a flip and a failback."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, logical_topic_with_twins, produce_values, wait_copied
from tests.integration.process_pause import resumed_after
from tests.support import wait_for

pyspark = pytest.importorskip("pyspark")

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = [pytest.mark.integration, pytest.mark.apache]


def options(rc: RefCluster, namespace: str, topic: str, **extra: str) -> dict[str, str]:
    return {**rc.client_config("app"), "hotstandby.route": "orders", "hotstandby.namespace": namespace,
            "subscribe": topic, **extra}  # fmt: skip


def replicated(rc: RefCluster, topic: str, count: int) -> None:
    """Wait until kafka-b's copy of kafka-a's ``topic`` holds ``count`` records."""
    wait_copied(rc, topic, None, count)


def test_a_batch_read_sees_the_logical_topic_once_across_copies_and_re_sends(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"sb-{uuid.uuid4().hex[:8]}"
    expected = logical_topic_with_twins(refcluster, center, namespace, topic, before=80, after=40, twins=20)

    read = spark.read.format("hotstandby").options(**options(refcluster, namespace, topic))
    rows = read.load().select("value", "topic", "cluster", "hs_id").collect()
    values = [r.value.decode() for r in rows]
    assert sorted(values) == sorted(expected), "the logical stream, each record once"
    assert {r.topic for r in rows} == {topic}, "copies carry the logical topic name"
    assert {r.cluster for r in rows} == {"kafka-b"}
    assert all(r.hs_id for r in rows)

    raw = read.option("hotstandby.dedupe", "false").load().count()
    assert raw == len(expected) + 20, "without dedupe every twin counts"


def test_the_schema_is_spark_kafka_columns_plus_the_failover_columns(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    read = spark.read.format("hotstandby").options(**options(refcluster, namespace, "t"))
    fields = [(f.name, f.dataType.simpleString()) for f in read.load().schema.fields]
    kafka = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"),
             ("timestamp", "timestamp"), ("timestampType", "int")]  # fmt: skip
    failover = [("cluster", "string"), ("route_epoch", "bigint"), ("hs_id", "binary")]
    assert fields == kafka + failover
    with_headers = [f.name for f in read.option("includeHeaders", "true").load().schema.fields]
    assert with_headers == [name for name, _ in kafka] + ["headers"] + [name for name, _ in failover]


def test_refused_options_name_the_problem(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    base = options(refcluster, namespace, "t")
    with pytest.raises(Exception, match=r"kafka\.bootstrap\.servers"):
        spark.read.format("hotstandby").options(**base, **{"kafka.bootstrap.servers": "x:9092"}).load().count()
    query = spark.readStream.format("hotstandby").options(**base).load().writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match=r"hotstandby\.group"):  # the query fails as it starts
            query.awaitTermination(60)
    finally:
        query.stop()


class Sink:
    """foreachBatch sink keeping rows per batch id (a replayed batch id replaces its rows)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[str]] = {}
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [r.value.decode() for r in df.select("value").collect()]
        with self.lock:
            self.batches[batch_id] = rows

    def values(self) -> list[str]:
        with self.lock:
            return [v for rows in self.batches.values() for v in rows]


@pytest.fixture
def stream(spark: Any, refcluster: RefCluster, namespace: str, tmp_path: Any) -> Iterator[Any]:
    queries = []

    def start(topic: str, sink: Sink, **extra: str) -> Any:
        settings = {
            "hotstandby.group": f"q-{topic}",
            "startingOffsets": "earliest",
            "hotstandby.drain.timeout.ms": "5000",
        }
        reader = spark.readStream.format("hotstandby").options(
            **options(refcluster, namespace, topic, **settings, **extra)
        )
        query = (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(processingTime="500 milliseconds").start())  # fmt: skip
        queries.append(query)
        return query

    yield start
    for q in queries:
        q.stop()


def test_a_streaming_query_follows_a_flip_and_a_failback_exactly_once(
    stream: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"ss-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    sink = Sink()
    query = stream(topic, sink, maxOffsetsPerTrigger="90")
    expected: list[str] = []
    for step, target in enumerate(("kafka-a", "kafka-b", "kafka-a")):
        if step:
            center.switch("orders", target, reason="test")
        values = [f"{target}-{step}-{i}" for i in range(120)]
        produce_values(refcluster, namespace, topic, values)
        expected += values

        def arrived(count: int = len(expected)) -> bool:
            assert query.exception() is None, query.exception()
            return len(set(sink.values())) >= count

        wait_for(arrived, timeout=90, what=f"{len(expected)} records in the sink")
    # Everything is in; two more triggers must add nothing.
    done = len(query.recentProgress)
    wait_for(lambda: len(query.recentProgress) >= done + 2, timeout=30, what="two more triggers")
    seen = sink.values()
    assert sorted(seen) == sorted(expected), "lost or duplicated"
    with sink.lock:
        largest = max(len(rows) for rows in sink.batches.values())
    assert largest <= 90 + 2, "maxOffsetsPerTrigger (at most one more per partition, Spark's rounding)"
    progress = [p.json if hasattr(p, "json") else json.dumps(p) for p in query.recentProgress]
    assert any("strategies" in text for text in progress), "a batch's offset names the switch and its strategies"


def test_a_streaming_query_flips_away_from_a_hung_kafka_cluster(
    stream: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """kafka-a is stopped (SIGSTOP: connections accepted, nothing answered, what a partition
    looks like) just before the flip: the query follows the flip in bounded time (its drain
    gives up on the hung cluster) and every record reaches the sink once."""
    topic = f"sh-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    sink = Sink()
    query = stream(topic, sink)
    expected = [f"a-{i}" for i in range(120)]
    produce_values(refcluster, namespace, topic, expected)

    def arrived(count: int) -> bool:
        assert query.exception() is None, query.exception()
        return len(set(sink.values())) >= count

    wait_for(lambda: arrived(120), timeout=90, what="120 records from kafka-a")
    with resumed_after(refcluster, "kafka-a") as broker:
        broker.pause()
        flipped = time.monotonic()
        center.switch("orders", "kafka-b", reason="kafka-a hangs")
        values = [f"b-{i}" for i in range(120)]
        produce_values(refcluster, namespace, topic, values)
        expected += values
        wait_for(lambda: arrived(240), timeout=90, what="the records written to kafka-b after the flip")
        took = time.monotonic() - flipped
    done = len(query.recentProgress)
    wait_for(lambda: len(query.recentProgress) >= done + 2, timeout=30, what="two more triggers")
    print(
        f"[measure] Spark query, flip away from a hung kafka-a: every record of kafka-b in the sink {took:.1f} s after"
    )
    assert sorted(sink.values()) == sorted(expected), "lost or duplicated"
