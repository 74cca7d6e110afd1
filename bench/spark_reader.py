"""The hotstandby Spark source vs a plain Python data source on the raw client, in the same run.

    python bench/spark_reader.py [--records N] [--rounds R] [--json]

Starts its own reference cluster on free loopback ports and a local Spark session
(``local[2]``), writes N records through the SDK producer (route ``orders`` on kafka-a, four
partitions), then reads that topic, taking turns round by round:

* ``hotstandby`` — ``format("hotstandby")``: offsets naming the cluster, one task per logical
  partition, identity decoded, the query's ledger loaded and checked per record, what was
  emitted staged in etcd and merged into the ledger at commit;
* ``raw`` — a plain Python data source defined here: the same Arrow columns, one task per
  partition, confluent-kafka assign and consume to the end offset, no failover logic.

Streaming: ``Trigger.AvailableNow`` from the earliest offsets to a ``noop`` sink (a new query and
group each round); batch: ``spark.read`` to a ``noop`` sink. A rate is N over the wall time of
the query (start to finish, Spark's own overhead included for both). Ratios (hotstandby / raw)
are medians over rounds; round 0 warms up and is not counted.
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

from hotstandby.logs import configure
from hotstandby.refcluster import Ports, RefCluster

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure("warning")
    here = os.path.dirname(os.path.abspath(__file__))  # Spark's Python workers import raw_kafka_source
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, here)
    from raw_kafka_source import RawKafka

    from hotstandby.spark_integration.local_session import local_session

    with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp, RefCluster(tmp, Ports.free()) as rc:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        _produce(rc, topic, args.records)
        spark = local_session("hotstandby-bench")
        try:
            spark.dataSource.register(RawKafka)
            hs = {"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
                  "hotstandby.namespace": rc.namespace, "subscribe": topic, "startingOffsets": "earliest"}  # fmt: skip
            raw = {"servers": rc.url("kafka-a"), "topic": topic}

            def batch(kind: str) -> float:
                fmt, opts = ("hotstandby", hs) if kind == "hotstandby" else ("rawkafka", raw)
                started = time.perf_counter()
                spark.read.format(fmt).options(**opts).load().write.format("noop").mode("overwrite").save()
                return args.records / (time.perf_counter() - started)

            def stream(kind: str, n: int) -> float:
                fmt, opts = (
                    ("hotstandby", {**hs, "hotstandby.group": f"bench-{uuid.uuid4().hex[:6]}"})
                    if kind == "hotstandby"
                    else ("rawkafka", raw)
                )
                started = time.perf_counter()
                query = (spark.readStream.format(fmt).options(**opts).load().writeStream.format("noop")
                         .option("checkpointLocation", os.path.join(tmp, f"ck-{kind}-{n}"))
                         .trigger(availableNow=True).start())  # fmt: skip
                if not query.awaitTermination(600):
                    query.stop()
                    raise RuntimeError(f"{kind}: the stream did not finish within 600 s")
                return args.records / (time.perf_counter() - started)

            rates: dict[str, list[float]] = {f"{k}_{w}": [] for k in ("hotstandby", "raw") for w in ("batch", "stream")}
            for n in range(args.rounds + 1):
                order = ("raw", "hotstandby") if n % 2 == 0 else ("hotstandby", "raw")
                for kind in order:
                    b, s = batch(kind), stream(kind, n)
                    if n:  # round 0 warms up
                        rates[f"{kind}_batch"].append(b)
                        rates[f"{kind}_stream"].append(s)
        finally:
            spark.stop()
    result: dict[str, Any] = {"records": args.records, "rounds": args.rounds}
    for what in ("stream", "batch"):
        hs_rates, raw_rates = rates[f"hotstandby_{what}"], rates[f"raw_{what}"]
        result[f"hotstandby_{what}_rows_per_s"] = round(statistics.median(hs_rates))
        result[f"raw_{what}_rows_per_s"] = round(statistics.median(raw_rates))
        result[f"{what}_ratio"] = round(statistics.median(h / r for h, r in zip(hs_rates, raw_rates, strict=True)), 2)
    result["ratio"] = result["stream_ratio"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for what in ("stream", "batch"):
            print(f"{what}: hotstandby {result[f'hotstandby_{what}_rows_per_s']:,}/s vs raw "
                  f"{result[f'raw_{what}_rows_per_s']:,}/s -> ratio {result[f'{what}_ratio']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
