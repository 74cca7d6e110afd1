"""Spark switch latency: route flip in etcd -> the first micro-batch with records of the new
cluster in the sink, for a streaming query of the hotstandby source with a one-second trigger.

    python bench/spark_switch.py [--route orders|payments] [--flips K] [--kill-primary]
                                 [--brokers lite|apache] [--refcluster-dir DIR] [--json]

An SDK producer writes 200 records/s to the route (it follows the flips); the query reads them
(``foreachBatch``, in this process, notes when each batch reaches the sink and which clusters its
rows came from). Once the query has settled (``WARM_BATCHES`` batches with records in the
sink), the route flips every ``--interval`` seconds. With ``--kill-primary`` each flip follows a
SIGKILL of the active broker, which is restarted once the query reads the new cluster (empty on
the lite Kafka cluster: the topic is created again there). Per flip it reports, from Spark's own
progress reports:

* ``latency_s`` — flip to the first batch in the sink that holds a record of the new cluster;
* ``waiting_s`` — flip to the start of the trigger that planned that batch (the batches still
  running or planned on the old cluster: the current one, and the one the drain waits for);
* ``planning_s`` — that trigger's ``latestOffset`` (the switch's steps: drain end, translation,
  the new cluster's positions);
* ``reading_s`` — its ``addBatch`` (the tasks reading the new cluster, and the sink).

Not a test: the figures go to docs/spark.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.configcenter import ConfigCenter
from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster

RATE = 200
TRIGGER = "1 second"
PARTITIONS = 2
WARM_BATCHES = 8  # a new query's first batches are slow (Python workers start): not a flip's cost


class Feed:
    """The route's SDK producer at a steady rate, on a thread, until stopped."""

    def __init__(self, rc: RefCluster, route: str, topic: str) -> None:
        self.rc, self.route, self.topic = rc, route, topic
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        etcd = f"127.0.0.1:{self.rc.ports.etcd}"
        if self.route == "orders":
            from hotstandby.adapters.kafka import Producer

            producer = Producer({"hotstandby.route": "orders", "hotstandby.etcd": etcd,
                                 "hotstandby.namespace": self.rc.namespace})  # fmt: skip
            send = lambda i: producer.produce(self.topic, key=str(i).encode(), value=b"x" * 100)  # noqa: E731
            finish = lambda: producer.flush(30)  # noqa: E731
            poll = lambda: producer.poll(0)  # noqa: E731
            close = producer.close
        else:
            import pulsar

            from hotstandby.adapters.pulsar import Client

            # pulsar-client logs to stdout without a logger of its own: the report goes there.
            quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
            client = Client("payments", etcd=etcd, namespace=self.rc.namespace, logger=quiet)
            pulsar_producer = client.create_producer(self.topic)
            send = lambda i: pulsar_producer.send_async(b"x" * 100, None)  # noqa: E731
            finish = pulsar_producer.flush
            poll = lambda: None  # noqa: E731
            close = client.close
        i = 0
        started = time.monotonic()
        try:
            while not self.stop.is_set():
                send(i)
                poll()
                i += 1
                time.sleep(max(0.0, started + i / RATE - time.monotonic()))
            finish()
        finally:
            close()


def create_topic(rc: RefCluster, cluster: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": rc.cluster_spec(cluster).url})
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])[name].result(15)


def prepare(rc: RefCluster, route: str) -> tuple[str, dict[str, str]]:
    """A fresh topic on both clusters of ``route``, and the source's options for it."""
    name = f"sw-{uuid.uuid4().hex[:8]}"
    if route == "orders":
        for cluster in ("kafka-a", "kafka-b"):
            create_topic(rc, cluster, name)
        return name, {"subscribe": name}
    topic = f"persistent://public/default/{name}"
    with ConfigCenter.open(rc.settings()) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            center.register_topic(cluster, topic)
    return topic, {"topic": topic}


def _trigger_start(progress: Any) -> float:
    return datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", choices=("orders", "payments"), default="orders")
    parser.add_argument("--flips", type=int, default=6)
    parser.add_argument("--interval", type=float, default=15.0, help="seconds between flips")
    parser.add_argument("--kill-primary", action="store_true", help="SIGKILL the active broker before each flip")
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    from hotstandby.spark_integration.local_session import local_session

    flips: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp,
        reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc,
    ):
        topic, what = prepare(rc, args.route)
        arrived: list[tuple[float, int, frozenset[str]]] = []  # (when, batch id, clusters)
        lock = threading.Lock()

        failures: list[str] = []

        def sink(df: Any, batch_id: int) -> None:
            try:
                clusters = frozenset(r.cluster for r in df.select("cluster").distinct().collect())
            except Exception as exc:
                # Spark matches a foreachBatch error's message against a regex that overflows the
                # stack on a long one, and the query then dies without an exception to report.
                failures.append(f"batch {batch_id}: {str(exc)[:4000]}")
                raise
            with lock:
                arrived.append((time.time(), batch_id, clusters))

        spark = local_session("hotstandby-bench-switch")
        feed = Feed(rc, args.route, topic)
        options = {"hotstandby.route": args.route, "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
                   "hotstandby.namespace": rc.namespace, "hotstandby.group": f"sw-{uuid.uuid4().hex[:6]}",
                   "startingOffsets": "earliest", **what}  # fmt: skip
        query = (spark.readStream.format("hotstandby").options(**options).load().writeStream.foreachBatch(sink)
                 .option("checkpointLocation", f"{tmp}/ck").trigger(processingTime=TRIGGER).start())  # fmt: skip
        feed.thread.start()
        try:
            with ConfigCenter.open(rc.settings()) as center:
                settle_deadline = time.time() + 300
                while time.time() < settle_deadline:
                    with lock:
                        if sum(1 for a in arrived if a[2]) >= WARM_BATCHES:
                            break
                    time.sleep(0.2)
                for k in range(args.flips):
                    now = center.route(args.route)
                    target = next(c for c in now.clusters if c != now.active)
                    if args.kill_primary:
                        rc.kill(now.active)
                    flipped = time.time()
                    center.switch(args.route, target, reason="bench")
                    deadline = flipped + 120
                    first = None
                    while first is None and time.time() < deadline:
                        if query.exception() is not None or failures:
                            raise RuntimeError(f"the query failed: {query.exception() or failures[0]}")
                        with lock:
                            first = next((a for a in arrived if a[0] > flipped and target in a[2]), None)
                        time.sleep(0.05)
                    if first is None:
                        raise RuntimeError(
                            f"no batch from {target} within 120 s of flip {k + 1}"
                            + (f"; {failures[0]}" if failures else "")
                        )
                    flips.append({"to": target, "at": flipped, "arrived": first[0], "batch": first[1]})
                    if args.kill_primary:
                        rc.restart(now.active)
                        if args.route == "orders" and rc.brokers == "lite":
                            create_topic(rc, now.active, topic)  # Tansu came back empty
                    time.sleep(max(0.0, flipped + args.interval - time.time()))
                progress = {p["batchId"]: p for p in (json.loads(q.json) for q in query.recentProgress)}
        finally:
            feed.stop.set()
            feed.thread.join(60)
            query.stop()
            spark.stop()
    rows = []
    for flip in flips:
        p = progress.get(flip["batch"])
        row = {"to": flip["to"], "latency_s": round(flip["arrived"] - flip["at"], 2)}
        if p is not None:
            durations = p.get("durationMs", {})
            row.update(waiting_s=round(_trigger_start(p) - flip["at"], 2),
                       planning_s=round(durations.get("latestOffset", 0) / 1000, 2),
                       reading_s=round(durations.get("addBatch", 0) / 1000, 2))  # fmt: skip
        rows.append(row)
    latencies = sorted(r["latency_s"] for r in rows)
    result = {"route": args.route, "brokers": rc.brokers, "trigger": TRIGGER, "killed": args.kill_primary, "flips": rows,
              "p50_s": round(statistics.median(latencies), 2),
              "p99_s": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in rows:
            print(r)
        print(f"flip -> first batch from the new cluster: p50 {result['p50_s']} s, p99 {result['p99_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
