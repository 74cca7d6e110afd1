"""The ``hotstandby`` sink on a real local Spark session and the reference cluster: a batch
written twice under one write id, a streaming query whose last micro-batch is written again
after a restart and across a flip, a Pulsar route; the copies carry the same identities and
the hotstandby source reads each row once."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.presence import list_clients
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, read_all
from tests.integration.test_spark_pulsar import options as pulsar_options
from tests.integration.test_spark_pulsar import topic  # noqa: F401 (the fixture)
from tests.support import wait_for

pytest.importorskip("pyspark")

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = [pytest.mark.integration, pytest.mark.apache]


def sink_options(rc: RefCluster, namespace: str, **extra: str) -> dict[str, str]:
    return {**rc.client_config("app"), "hotstandby.route": "orders", "hotstandby.namespace": namespace, **extra}


def logical_values(spark: Any, rc: RefCluster, namespace: str, logical: str) -> Counter[str]:
    """The logical topic as the hotstandby source reads it (copies and twins dropped)."""
    rows = (spark.read.format("hotstandby").options(**sink_options(rc, namespace, subscribe=logical)).load()
            .select("value").collect())  # fmt: skip
    return Counter(r.value.decode() for r in rows)


def test_a_batch_written_twice_under_one_write_id_is_read_once(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    name = f"sk-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), name, 3)
    values = [f"v{i}" for i in range(300)]
    df = spark.createDataFrame([(v, v if i % 3 else None) for i, v in enumerate(values)], "value string, key string")
    df = df.repartition(4)
    write = df.write.format("hotstandby").options(**sink_options(refcluster, namespace, topic=name))
    write.option("hotstandby.writeId", "nightly-1").mode("append").save()
    write.option("hotstandby.writeId", "nightly-1").mode("append").save()  # the same job run again
    stored = [m for p in range(3) for m in read_all(refcluster.cluster_spec("kafka-a"), name, p)]
    assert len(stored) == 600, "both runs were written"
    ids = Counter(dict(m.headers() or [])["hs-id"] for m in stored)
    assert len(ids) == 300 and set(ids.values()) == {2}, "each row has one identity, the same in both runs"
    assert logical_values(spark, refcluster, namespace, name) == Counter(values)
    write.option("hotstandby.writeId", "nightly-2").mode("append").save()
    assert logical_values(spark, refcluster, namespace, name) == Counter({v: 2 for v in values}), (
        "another write id is another write"
    )


def _stored(rc: RefCluster, cluster: str, logical: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": rc.url(cluster), "group.id": "__hs-test-reader"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(logical, p), timeout=10)[1] for p in range(partitions))
    finally:
        consumer.close()


def _paced(flipped: str, moved: str, hold_after: int = 600) -> Any:
    """The frame's rows in small steps, so that a write is still going on when its writers
    switch: 100 rows every 0.2 s until the task gave ``hold_after`` rows, then none until the
    file ``flipped`` exists (at most two minutes: the flip waits for rows on kafka-a, and a
    write that ended before it would test nothing), then 10 rows every 0.5 s until the file
    ``moved`` exists (rows reached the new cluster: up to two minutes of rows left for a slow
    switch), then the rest at once."""

    def paced(rows: Any) -> Any:
        given = 0
        for frame in rows:
            start = 0
            while start < len(frame):
                step = 100
                if not os.path.exists(moved):
                    if given >= hold_after:
                        deadline = time.monotonic() + 120
                        while not os.path.exists(flipped) and time.monotonic() < deadline:
                            time.sleep(0.05)  # polls for the flip, within the deadline
                    slow = os.path.exists(flipped)
                    step = 10 if slow else 100
                    time.sleep(0.5 if slow else 0.2)  # pacing, not a wait for a condition
                yield frame.iloc[start : start + step]
                start += step
                given += step

    return paced


@pytest.mark.real_tier_only  # where a switch's drain is shorter than the paced write (on Apache Kafka)
def test_a_flip_during_a_write_moves_the_rest_of_it_and_loses_nothing(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path
) -> None:
    name = f"skf-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), name, 2)
    # A Python worker sends its output on in 64 KiB blocks (spark.buffer.size): rows of 1 KB make
    # each paced step reach the sink as it is given, not with the end of the task's rows.
    values = [f"f{i}-" + "x" * 1000 for i in range(6000)]
    df = spark.createDataFrame([(v,) for v in values], "value string").repartition(2)
    marks = {"flipped": str(tmp_path / "flipped"), "moved": str(tmp_path / "moved")}
    paced = df.mapInPandas(_paced(**marks), df.schema)
    flipped, ended = threading.Event(), threading.Event()
    moved_after: list[float | str] = []  # seconds from the flip to rows on kafka-b, or what failed

    def flip_midway() -> None:
        try:
            wait_for(lambda: _stored(refcluster, "kafka-a", name, 2) >= 500, 120, "the write to begin on kafka-a")
            center.switch("orders", "kafka-b", reason="test")
            at = time.monotonic()
            Path(marks["flipped"]).touch()  # the write slows down until the writers moved
            flipped.set()
            wait_for(lambda: _stored(refcluster, "kafka-b", name, 2) > 0 or ended.is_set(), 150,
                     "the write to go on on kafka-b")  # fmt: skip
            if _stored(refcluster, "kafka-b", name, 2) == 0:
                raise AssertionError(f"the write ended {round(time.monotonic() - at, 1)} s after the flip")
            moved_after.append(round(time.monotonic() - at, 1))
        except AssertionError as exc:
            # Where the writers' producers stood (their presence in etcd): which epoch and state.
            producers = [{k: c.get(k) for k in ("client", "pid", "cluster", "epoch", "state", "switches", "problem")}
                         for c in list_clients(center, "orders") if c.get("role") == "producer"]  # fmt: skip
            moved_after.append(f"{exc}; producers: {producers}")
        finally:
            Path(marks["moved"]).touch()

    flipper = threading.Thread(target=flip_midway, daemon=True)
    flipper.start()
    # Arrow batches of 100 rows: the sink gets the rows as the paced step yields them.
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        paced.write.format("hotstandby").options(**sink_options(refcluster, namespace, topic=name)).mode(
            "append"
        ).save()
    finally:
        ended.set()
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    flipper.join(160)
    assert flipped.is_set(), f"the route flipped during the write: {moved_after}"
    assert _stored(refcluster, "kafka-b", name, 2) > 0, f"the rest of the write went to kafka-b: {moved_after}"
    seen = wait_for(
        lambda: (got := logical_values(spark, refcluster, namespace, name)) == Counter(values) and got,
        timeout=60,
        what="every row once (kafka-a's part replicated to kafka-b)",
    )
    assert max(seen.values()) == 1


def _commit_files(checkpoint: Path) -> list[Path]:
    return sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))


def test_a_stream_written_again_after_a_restart_and_across_a_flip_is_read_once(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path
) -> None:
    name = f"sks-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), name, 2)
    inbox, checkpoint = tmp_path / "in", tmp_path / "ck"
    inbox.mkdir()

    def drop(file: str, values: list[str]) -> None:
        (inbox / f"{file}.json").write_text("".join(json.dumps({"v": v}) + "\n" for v in values))

    def run() -> Any:
        stream = spark.readStream.schema("v string").option("maxFilesPerTrigger", 1).json(str(inbox))
        shaped = stream.selectExpr("upper(v) AS value", "v AS key")  # a transformation on the way
        return (shaped.writeStream.format("hotstandby").options(**sink_options(refcluster, namespace, topic=name))
                .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())  # fmt: skip

    expected: list[str] = []
    for part in range(2):
        values = [f"a{part}-{i}" for i in range(100)]
        drop(f"a{part}", values)
        expected += [v.upper() for v in values]
    query = run()
    assert query.awaitTermination(120), "the files read"
    assert query.exception() is None
    commits = _commit_files(checkpoint)
    assert len(commits) == 2, "a micro-batch per file"
    for written in (commits[-1], commits[-1].with_name(f".{commits[-1].name}.crc")):
        written.unlink(missing_ok=True)  # the driver died after writing micro-batch 1, before committing it
    center.switch("orders", "kafka-b", reason="test")  # and the route flipped meanwhile
    values = [f"b-{i}" for i in range(100)]
    drop("b", values)
    expected += [v.upper() for v in values]
    query = run()
    assert query.awaitTermination(120), "the files read"
    assert query.exception() is None
    assert len(_commit_files(checkpoint)) == 3, "micro-batch 1 ran again, then the new file"
    again = sum(len(read_all(refcluster.cluster_spec("kafka-b"), name, p)) for p in range(2))
    assert again == 200, "micro-batch 1 written again on kafka-b, then micro-batch 2"
    seen = wait_for(
        lambda: (got := logical_values(spark, refcluster, namespace, name)) == Counter(expected) and got,
        timeout=60,
        what="every row once (kafka-a's copies replicated to kafka-b)",
    )
    assert max(seen.values()) == 1


def test_a_pulsar_route_is_written_with_the_pulsar_connectors_columns(
    spark: Any,
    refcluster: RefCluster,
    center: ConfigCenter,
    namespace: str,
    topic: str,  # noqa: F811 (the fixture)
) -> None:
    rows = [(f"p{i}".encode(), f"k{i % 5}", {"n": str(i)}) for i in range(120)]
    df = spark.createDataFrame(rows, "value binary, __key string, __messageProperties map<string, string>")
    write = df.repartition(3).write.format("hotstandby").mode("append")
    write = write.options(**pulsar_options(refcluster, namespace, topic), **{"hotstandby.writeId": "w"})
    write.save()
    write.save()
    read = spark.read.format("hotstandby").options(**pulsar_options(refcluster, namespace, topic)).load()
    got = read.select("value", "__key", "__messageProperties").collect()
    assert sorted((r.value.decode(), r["__key"], r["__messageProperties"]["n"]) for r in got) == sorted(
        (v.decode(), k, p["n"]) for v, k, p in rows
    ), "each row once, with its key and properties"
    raw = read.sparkSession.read.format("hotstandby").options(
        **pulsar_options(refcluster, namespace, topic), **{"hotstandby.dedupe": "false"}
    )
    assert raw.load().count() == 240, "both writes stored"


def test_the_sink_refuses_what_it_cannot_write(
    spark: Any, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    base = sink_options(refcluster, namespace, topic="t")
    with pytest.raises(Exception, match="needs a value column"):
        spark.createDataFrame([("x",)], "key string").write.format("hotstandby").options(**base).mode("append").save()
    frame = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="appends"):
        frame.write.format("hotstandby").options(**base).mode("overwrite").save()
    with pytest.raises(Exception, match=r"kafka\.bootstrap\.servers"):
        frame.write.format("hotstandby").options(**base, **{"kafka.bootstrap.servers": "x:1"}).mode("append").save()
    with pytest.raises(Exception, match="not offset"):
        spark.createDataFrame([("x", 1)], "value string, offset long").write.format("hotstandby").options(**base).mode(
            "append"
        ).save()
