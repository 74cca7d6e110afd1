"""What a commit costs: hotstandby's Kafka Consumer against the raw confluent-kafka Consumer,
in the same run, on the same broker.

    python bench/commits.py [--partitions 4 64] [--commits N] [--brokers lite|apache]
                            [--refcluster-dir DIR] [--json]

For each partition count P a topic of P partitions is filled on kafka-a, and two consumers
(raw and SDK, route ``orders``, a group each, the partitions assigned by hand) read it in
turns. Each measured commit follows a fresh record of every partition, so every partition has
something new to commit:

* ``message``: ``commit(message=<the last record>, asynchronous=False)`` — one partition;
* ``all``: ``commit(asynchronous=False)`` — every partition (the SDK stores every ledger).

It prints per client and kind the median wall time and the CPU time of the process per
commit (the CPU figure does not depend on the machine's noise as much), and SDK ÷ raw. Raw
and SDK take turns commit by commit, so the noise of this shared machine hits both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.refcluster import RefCluster

_KINDS = ("message", "all")


def _route(rc: RefCluster) -> dict[str, Any]:
    return {"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
            "hotstandby.namespace": rc.namespace}  # fmt: skip


class _Writer:
    """Writes one record to every partition of a new topic on kafka-a, before each commit,
    through hotstandby's Producer: records carry their identity, as in production, so the SDK
    consumer has acknowledgements to store."""

    def __init__(self, rc: RefCluster, topic: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        from hotstandby.adapters.kafka import Producer

        url = rc.cluster_spec("kafka-a").url
        admin = AdminClient({"bootstrap.servers": url})  # kept until the result is in: it owns the request
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        self.topic, self.partitions = topic, partitions
        self._producer = Producer({"linger.ms": 0, **_route(rc)})
        deadline = time.monotonic() + 30
        while len(self._producer.list_topics(topic, timeout=5).topics[topic].partitions) < partitions:
            if time.monotonic() > deadline:
                raise SystemExit(f"{topic} has not got its {partitions} partitions within 30 s")
            time.sleep(0.1)
        self._failed: list[Any] = []

    def one_each(self, i: int) -> None:
        for p in range(self.partitions):
            self._producer.produce(self.topic, value=f"v{i}".encode(), partition=p,
                                   on_delivery=lambda err, _m: self._failed.append(err) if err else None)  # fmt: skip
        if self._producer.flush(30) != 0 or self._failed:
            raise SystemExit(f"the records were not all written: {self._failed[:3]}")


def _take_one_each(consumer: Any, partitions: int, timeout: float = 30.0, name: str = "") -> Any:
    """Read until every partition gave a record (each has just got one); the last one read."""
    seen: set[int] = set()
    last = None
    deadline = time.monotonic() + timeout
    while len(seen) < partitions:
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: only {len(seen)} of {partitions} partitions gave a record within {timeout} s")
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        seen.add(msg.partition())
        last = msg
    return last


def measure(rc: RefCluster, partitions: int, commits: int) -> dict[str, Any]:
    """Raw and SDK synchronous commits of one message and of all ``partitions``, side by side."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    from confluent_kafka import Consumer as RawConsumer

    from hotstandby.adapters.kafka import Consumer

    topic = f"commits-{partitions}-{uuid.uuid4().hex[:6]}"
    writer = _Writer(rc, topic, partitions)
    common = {"enable.auto.commit": False, "enable.auto.offset.store": True}
    raw = RawConsumer({**common, "bootstrap.servers": rc.cluster_spec("kafka-a").url, "group.id": f"raw-{topic}"})
    sdk = Consumer({**common, "group.id": f"sdk-{topic}", **_route(rc)})
    clients = {"raw": raw, "sdk": sdk}
    wall: dict[str, dict[str, list[float]]] = {c: {k: [] for k in _KINDS} for c in clients}
    cpu: dict[str, dict[str, list[float]]] = {c: {k: [] for k in _KINDS} for c in clients}
    try:
        for consumer in clients.values():
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        for i in range(commits + 5):
            for kind in _KINDS:
                writer.one_each(i)
                for name, consumer in clients.items():
                    last = _take_one_each(consumer, partitions, name=name)
                    started, started_cpu = time.perf_counter(), time.process_time()
                    if kind == "message":
                        consumer.commit(message=last, asynchronous=False)
                    else:
                        consumer.commit(asynchronous=False)
                    if i >= 5:  # the first ones warm connections and caches up
                        wall[name][kind].append(time.perf_counter() - started)
                        cpu[name][kind].append(time.process_time() - started_cpu)
    finally:
        raw.close()
        sdk.close()
    out: dict[str, Any] = {"partitions": partitions, "commits": commits}
    for kind in _KINDS:
        figures = {name: {"wall_ms": round(statistics.median(wall[name][kind]) * 1000, 3),
                          "cpu_ms": round(statistics.mean(cpu[name][kind]) * 1000, 3)}
                   for name in clients}  # fmt: skip
        figures["ratio"] = round(figures["sdk"]["wall_ms"] / figures["raw"]["wall_ms"], 2)
        figures["cpu_ratio"] = round(figures["sdk"]["cpu_ms"] / max(figures["raw"]["cpu_ms"], 1e-6), 2)
        out[kind] = figures
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="+", default=[4, 64])
    parser.add_argument("--commits", type=int, default=100, help="measured commits per client, kind and count")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    add_cluster_options(parser)
    args = parser.parse_args()
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        results = [measure(rc, p, args.commits) for p in args.partitions]
    if args.json:
        print(json.dumps({"brokers": args.brokers, "results": results}, indent=2))
        return 0
    print(f"commits on the {args.brokers} reference cluster (median wall ms, mean CPU ms per commit)")
    for r in results:
        for kind in _KINDS:
            f = r[kind]
            print(f"  {r['partitions']:>3} partitions, {kind:<7}  raw {f['raw']['wall_ms']:7.3f} ms "
                  f"(cpu {f['raw']['cpu_ms']:.3f})  sdk {f['sdk']['wall_ms']:7.3f} ms (cpu {f['sdk']['cpu_ms']:.3f})  "
                  f"sdk/raw {f['ratio']:.2f} (cpu {f['cpu_ratio']:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
