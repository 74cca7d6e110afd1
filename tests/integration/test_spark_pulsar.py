"""The ``hotstandby`` Spark data source on a Pulsar route (``payments``): the Pulsar connector's
columns, a batch read, and a streaming query across a flip and a failback, exactly once."""

from __future__ import annotations

import json
import urllib.request
import uuid
from dataclasses import replace
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.test_spark_source import Sink
from tests.support import wait_for

pytest.importorskip("pyspark")

pytestmark = pytest.mark.integration


def _new_ledger(rc: RefCluster, topic: str) -> None:
    """Apache Pulsar: unload ``topic`` from pulsar-a, which closes its ledger; the next message
    goes to a new one."""
    path = topic.replace("persistent://", "/admin/v2/persistent/")
    request = urllib.request.Request(f"http://127.0.0.1:{rc.ports.of('pulsar-a_http')}{path}/unload", method="PUT")
    with urllib.request.urlopen(request, timeout=30):
        pass


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    """A fresh topic the reference replicators copy both ways."""
    name = f"persistent://public/default/spark-{uuid.uuid4().hex[:8]}"
    with ConfigCenter.open(replace(refcluster.settings())) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            center.register_topic(cluster, name)
    return name


def send(rc: RefCluster, namespace: str, topic: str, values: list[str]) -> None:
    client = Client("payments", etcd=f"127.0.0.1:{rc.ports.etcd}", namespace=namespace,
                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    try:
        producer = client.create_producer(topic)
        for v in values:
            producer.send_async(v.encode(), None, properties={"v": v})
        producer.flush()
    finally:
        client.close()


def options(rc: RefCluster, namespace: str, topic: str, **extra: str) -> dict[str, str]:
    return {"hotstandby.route": "payments", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
            "hotstandby.namespace": namespace, "topic": topic, **extra}  # fmt: skip


def test_a_batch_read_of_a_pulsar_route_has_the_pulsar_connectors_columns(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str
) -> None:
    values = [f"p{i}" for i in range(50)]
    send(refcluster, namespace, topic, values)
    df = spark.read.format("hotstandby").options(**options(refcluster, namespace, topic)).load()
    assert [f.name for f in df.schema.fields] == [
        "value", "__key", "__topic", "__messageId", "__publishTime", "__eventTime", "__messageProperties",
        "cluster", "route_epoch", "hs_id",
    ]  # fmt: skip
    rows = df.collect()
    assert sorted(r.value.decode() for r in rows) == sorted(values)
    assert {r["__topic"] for r in rows} == {topic} and {r.cluster for r in rows} == {"pulsar-a"}
    assert all(r.hs_id and r["__messageProperties"]["v"] == r.value.decode() for r in rows)
    # topicsPattern: the registered topics it matches (another registered topic, one not registered)
    other, unregistered = f"{topic}-two", f"{topic}-three"
    for name in (topic, other):  # in the query's namespace (the fixture registers for the replicators)
        center.register_topic("pulsar-a", name)
    send(refcluster, namespace, other, ["o1", "o2"])
    send(refcluster, namespace, unregistered, ["u1"])
    pattern = options(refcluster, namespace, topic)
    del pattern["topic"]
    pattern["topicsPattern"] = topic.replace("persistent://", "persistent://(?:") + ")(-.*)?"
    rows = spark.read.format("hotstandby").options(**pattern).load().collect()
    assert sorted((r["__topic"], r.value.decode()) for r in rows if r["__topic"] != topic) == [
        (other, "o1"), (other, "o2")
    ]  # fmt: skip
    assert len(rows) == len(values) + 2
    with pytest.raises(Exception, match="maxOffsetsPerTrigger is for Kafka routes"):
        spark.read.format("hotstandby").options(
            **options(refcluster, namespace, topic, maxOffsetsPerTrigger="5")
        ).load().count()


def test_a_streaming_query_on_a_pulsar_route_follows_a_flip_and_a_failback_exactly_once(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str, tmp_path: Any
) -> None:
    sink = Sink()
    settings = {"hotstandby.group": f"q-{uuid.uuid4().hex[:6]}", "startingOffsets": "earliest"}
    reader = spark.readStream.format("hotstandby").options(**options(refcluster, namespace, topic, **settings))
    query = (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="500 milliseconds").start())  # fmt: skip
    expected: list[str] = []
    try:
        for step, target in enumerate(("pulsar-a", "pulsar-b", "pulsar-a")):
            if step:
                center.switch("payments", target, reason="test")
            values = [f"{target}-{step}-{i}" for i in range(100)]
            send(refcluster, namespace, topic, values)
            expected += values

            def arrived(count: int = len(expected)) -> bool:
                assert query.exception() is None, query.exception()
                return len(set(sink.values())) >= count

            wait_for(arrived, timeout=90, what=f"{len(expected)} messages in the sink")
        done = len(query.recentProgress)
        wait_for(lambda: len(query.recentProgress) >= done + 2, timeout=30, what="two more triggers")
        assert sorted(sink.values()) == sorted(expected), "lost or duplicated"
        progress = [p.json if hasattr(p, "json") else json.dumps(p) for p in query.recentProgress]
        # pulsar-a -> pulsar-b: the query read no copy from pulsar-b yet; back to pulsar-a: it read
        # pulsar-a's messages on pulsar-b as copies, and starts after them
        assert any('"earliest"' in text for text in progress), "the switch's strategy is in the offsets"
        switches = [json.loads(p)["sources"][0]["endOffset"] for p in progress if '"switch' in p]
        assert any('"replicated-source-position"' in text for text in progress), switches
    finally:
        query.stop()


@pytest.mark.apache
def test_max_entries_per_trigger_reads_a_backlog_in_bounded_batches_across_ledgers(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str, tmp_path: Any, brokers: str
) -> None:
    """A query that falls behind catches up in batches of at most maxEntriesPerTrigger entries
    (the producer does not batch: an entry per message), across ledgers on Apache Pulsar, each
    message once."""
    group = f"q-{uuid.uuid4().hex[:6]}"
    # The query's subscription exists from an earlier run (a query that stopped for a while):
    # Pulsar keeps what it has not read, ledgers closed since included.
    raw = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        raw.subscribe(topic, f"hotstandby-spark-{group}", consumer_type=pulsar.ConsumerType.Failover,
                      initial_position=pulsar.InitialPosition.Earliest).close()  # fmt: skip
    finally:
        raw.close()
    expected = []
    for part in range(3):
        values = [f"e{part}-{i}" for i in range(70)]
        send(refcluster, namespace, topic, values)
        expected += values
        if brokers == "apache":
            _new_ledger(refcluster, topic)
    sink = Sink()
    settings = {"hotstandby.group": group, "startingOffsets": "earliest", "maxEntriesPerTrigger": "25"}
    query = (spark.readStream.format("hotstandby").options(**options(refcluster, namespace, topic, **settings))
             .load().writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())  # fmt: skip
    try:

        def caught_up() -> bool:
            assert query.exception() is None, query.exception()
            return len(sink.values()) >= len(expected)

        wait_for(caught_up, timeout=120, what=f"{len(expected)} messages in the sink")
    finally:
        query.stop()
    assert sorted(sink.values()) == sorted(expected), "lost or duplicated"
    sizes = [len(rows) for rows in sink.batches.values() if rows]
    assert max(sizes) <= 25, f"a batch beyond the cap: {sizes}"
    assert len(sizes) >= len(expected) // 25, sizes
