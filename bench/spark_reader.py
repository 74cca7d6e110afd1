"""The hotstandby Spark source vs Spark's own Kafka source, in the same run.

    python bench/spark_reader.py [--records N] [--rounds R] [--brokers lite|apache]
                                 [--refcluster-dir DIR] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up) and a local
Spark session (``local[2]``), writes N records through the SDK producer (route ``orders`` on
kafka-a, four partitions), then reads that topic, taking turns round by round:

* ``hotstandby`` — ``format("hotstandby")``: offsets naming the cluster, one task per logical
  partition, identity decoded, the query's ledger loaded and checked per record, what was
  emitted staged in etcd and merged into the ledger at commit;
* ``spark_kafka`` — Spark's own Kafka source (``format("kafka")``, ``spark-sql-kafka-0-10``
  resolved by Maven from Maven Central: 4.2.0, the newest served, on pip's pyspark), what a
  Spark user would pick without failover: the yardstick;
* ``raw`` — a plain Python data source defined here: the same Arrow columns, one task per
  partition, confluent-kafka assign and consume to the end offset, no failover logic: what the
  Python Data Source API itself costs;
* ``jvm_filtered`` — Spark's Kafka source with its headers, then ``bench/ledger_filter.py`` in
  ``mapInArrow``: the identities decoded and looked up in a ledger (here empty) and in what the
  task passed, batch by batch with numpy: what a design that plans with the failover core and
  lets the JVM connector read the planned ranges would cost;
* ``jvm_sql`` — the same with the filter in Spark SQL, never leaving the JVM: the identity's
  session, partition and sequence taken from the ``hs-id`` header with SQL expressions, and an
  anti-join with the ledger's ranges broadcast (here one range of another session). It checks
  the ledger only: twins within one micro-batch would need a further step.

Streaming: ``Trigger.AvailableNow`` from the earliest offsets to a ``noop`` sink (a new query and
group each round); batch: ``spark.read`` to a ``noop`` sink. A rate is N over the wall time of
the query (start to finish, Spark's own overhead included for each). Ratios (hotstandby over
the others) are medians over rounds; round 0 warms up and is not counted. Each source's row
count is checked once against N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.jars import JarSet

TOPIC_PARTITIONS = 4


def _produce(rc: RefCluster, topic: str, records: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from hotstandby.adapters.kafka import Producer

    spec = rc.cluster_spec("kafka-a")
    admin = AdminClient({"bootstrap.servers": spec.url})  # kept: a freed client cancels its requests
    admin.create_topics([NewTopic(topic, num_partitions=TOPIC_PARTITIONS, replication_factor=1)])[topic].result(15)
    producer = Producer({"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
                         "hotstandby.namespace": rc.namespace})  # fmt: skip
    try:
        for i in range(records):
            while True:
                try:
                    producer.produce(topic, key=str(i).encode(), value=b"x" * 100)
                    break
                except BufferError:
                    producer.poll(0.01)
        if producer.flush(300) != 0:
            raise RuntimeError("records still undelivered after 300 s")
    finally:
        producer.close()


KINDS = ("hotstandby", "spark_kafka", "raw", "jvm_filtered", "jvm_sql")


def spark_kafka_jars() -> str:
    """Spark's Kafka source and what it needs beyond pyspark, resolved by Maven (once)."""
    folder = JarSet("spark-kafka").resolve(progress=lambda note: print(note, file=sys.stderr))
    return ",".join(str(jar) for jar in sorted(folder.glob("*.jar")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    here = os.path.dirname(os.path.abspath(__file__))  # Spark's Python workers import raw_kafka_source
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, here)
    from ledger_filter import ledger_filter
    from raw_kafka_source import RawKafka

    from hotstandby.spark_integration.local_session import local_session

    jars = spark_kafka_jars()
    with (
        tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp,
        reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc,
    ):
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        args.brokers = rc.brokers
        _produce(rc, topic, args.records)
        spark = local_session("hotstandby-bench", **{"spark.jars": jars})
        try:
            spark.dataSource.register(RawKafka)
            sources = _sources(rc, topic)

            def frame(reader: Any, kind: str) -> Any:
                fmt, opts = sources[kind]
                df = reader.format(fmt).options(**opts(kind)).load()
                if kind == "jvm_filtered":
                    return df.mapInArrow(ledger_filter({}), df.schema)
                return _sql_filtered(spark, df) if kind == "jvm_sql" else df

            for kind in KINDS:
                count = frame(spark.read, kind).count()
                if count != args.records:
                    raise RuntimeError(f"{kind} read {count} records, not {args.records}")

            def batch(kind: str) -> float:
                started = time.perf_counter()
                frame(spark.read, kind).write.format("noop").mode("overwrite").save()
                return args.records / (time.perf_counter() - started)

            def stream(kind: str, n: int) -> float:
                started = time.perf_counter()
                query = (frame(spark.readStream, kind).writeStream.format("noop")
                         .option("checkpointLocation", os.path.join(tmp, f"ck-{kind}-{n}"))
                         .trigger(availableNow=True).start())  # fmt: skip
                if not query.awaitTermination(600):
                    query.stop()
                    raise RuntimeError(f"{kind}: the stream did not finish within 600 s")
                return args.records / (time.perf_counter() - started)

            rates: dict[str, list[float]] = {f"{k}_{w}": [] for k in KINDS for w in ("batch", "stream")}
            for n in range(args.rounds + 1):
                order = KINDS[n % len(KINDS) :] + KINDS[: n % len(KINDS)]  # each goes first in turn
                for kind in order:
                    b, s = batch(kind), stream(kind, n)
                    if n:  # round 0 warms up
                        rates[f"{kind}_batch"].append(b)
                        rates[f"{kind}_stream"].append(s)
        finally:
            spark.stop()
    result = _result(args, rates)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for what in ("stream", "batch"):
            print(f"{what}: hotstandby {result[f'hotstandby_{what}_rows_per_s']:,}/s, Spark's Kafka source "
                  f"{result[f'spark_kafka_{what}_rows_per_s']:,}/s (ratio {result[f'{what}_ratio']}), raw Python "
                  f"source {result[f'raw_{what}_rows_per_s']:,}/s (ratio {result[f'{what}_ratio_to_raw']}); Spark's "
                  f"Kafka source + ledger filter {result[f'jvm_filtered_{what}_rows_per_s']:,}/s "
                  f"({result[f'jvm_filtered_{what}_ratio']} of Spark's), in Spark SQL "
                  f"{result[f'jvm_sql_{what}_rows_per_s']:,}/s ({result[f'jvm_sql_{what}_ratio']})")  # fmt: skip
    return 0


def _sources(rc: RefCluster, topic: str) -> dict[str, tuple[str, Any]]:
    """Each contender's format and its options (a new group per streaming query)."""
    hs = {"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
          "hotstandby.namespace": rc.namespace, "subscribe": topic, "startingOffsets": "earliest"}  # fmt: skip
    kafka = {"kafka.bootstrap.servers": rc.url("kafka-a"), "subscribe": topic, "startingOffsets": "earliest"}
    raw = {"servers": rc.url("kafka-a"), "topic": topic}
    return {
        "hotstandby": ("hotstandby", lambda _: {**hs, "hotstandby.group": f"bench-{uuid.uuid4().hex[:6]}"}),
        "spark_kafka": ("kafka", lambda _: kafka),
        "raw": ("rawkafka", lambda _: raw),
        "jvm_filtered": ("kafka", lambda _: {**kafka, "includeHeaders": "true"}),
        "jvm_sql": ("kafka", lambda _: {**kafka, "includeHeaders": "true"}),
    }


# The hs-id header's parts, as SQL over its hex (version, 16-byte session, partition and
# sequence varints: what producers write, a sequence below 2**21).
_IDENTITY = """
    SELECT *, substring(hid, 3, 32) AS hs_session, conv(substring(hid, 35, 2), 16, 10) AS hs_partition,
      CASE length(hid)
        WHEN 38 THEN cast(conv(substring(hid, 37, 2), 16, 10) AS BIGINT)
        WHEN 40 THEN (cast(conv(substring(hid, 37, 2), 16, 10) AS BIGINT) & 127)
                     | shiftleft(cast(conv(substring(hid, 39, 2), 16, 10) AS BIGINT), 7)
        ELSE (cast(conv(substring(hid, 37, 2), 16, 10) AS BIGINT) & 127)
             | shiftleft(cast(conv(substring(hid, 39, 2), 16, 10) AS BIGINT) & 127, 7)
             | shiftleft(cast(conv(substring(hid, 41, 2), 16, 10) AS BIGINT), 14)
      END AS hs_sequence
    FROM (SELECT *, hex(element_at(filter(headers, h -> h.key = 'hs-id'), 1).value) AS hid FROM {frame})
"""


def _sql_filtered(spark: Any, df: Any) -> Any:
    """``df`` (Spark's Kafka columns and headers) less what a ledger holds, in Spark SQL."""
    from pyspark.sql import functions as f

    name = f"kafka_{uuid.uuid4().hex[:8]}"
    df.createOrReplaceTempView(name)
    ids = spark.sql(_IDENTITY.format(frame=name))
    ranges = spark.createDataFrame([(uuid.uuid4().hex.upper(), "0", 0, 1000)],
                                   "r_session string, r_partition string, r_first bigint, r_last bigint")  # fmt: skip
    held = ((ids.hs_session == ranges.r_session) & (ids.hs_partition == ranges.r_partition)
            & ids.hs_sequence.between(ranges.r_first, ranges.r_last))  # fmt: skip
    return ids.join(f.broadcast(ranges), held, "left_anti").drop("hid", "hs_session", "hs_partition", "hs_sequence")


def _median_ratio(ours: list[float], theirs: list[float]) -> float:
    return round(statistics.median(a / b for a, b in zip(ours, theirs, strict=True)), 2)


def _result(args: argparse.Namespace, rates: dict[str, list[float]]) -> dict[str, Any]:
    result: dict[str, Any] = {"records": args.records, "rounds": args.rounds, "brokers": args.brokers,
                              "spark_kafka": JarSet("spark-kafka").version}  # fmt: skip
    for what in ("stream", "batch"):
        for kind in KINDS:
            result[f"{kind}_{what}_rows_per_s"] = round(statistics.median(rates[f"{kind}_{what}"]))
        hs = rates[f"hotstandby_{what}"]
        for other, key in (("spark_kafka", f"{what}_ratio"), ("raw", f"{what}_ratio_to_raw")):
            result[key] = _median_ratio(hs, rates[f"{other}_{what}"])
        for jvm in ("jvm_filtered", "jvm_sql"):
            result[f"{jvm}_{what}_ratio"] = _median_ratio(rates[f"{jvm}_{what}"], rates[f"spark_kafka_{what}"])
    result["ratio"] = result["stream_ratio"]
    return result


if __name__ == "__main__":
    sys.exit(main())
