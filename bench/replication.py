"""Replication throughput and end-to-end latency of the reference replicators.

    python bench/replication.py [--system kafka|pulsar|both] [--records N] [--json]

Starts its own reference cluster on free loopback ports, writes N records to the primary
(kafka-a / pulsar-a), each stamped with its send time, and reads the copies on the standby.
Throughput: a burst of N records; copies per second from the first send to the last copy,
and, measured in the same run as a baseline, how fast the same client writes straight to the
standby (``copy_ratio`` = replicated / direct). Latency: a second, paced run (``--rate``
records/s, below capacity, so no backlog builds up) from send to copy received, p50/p99.
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
from typing import Any

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import Ports, RefCluster


def progress(label: str, done: int, total: int) -> None:
    if sys.stderr.isatty():
        print(f"\r{label}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive")
    return {"p50": round(q[49], 2), "p99": round(q[98], 2), "max": round(ordered[-1], 2)}


def pace(started: float, i: int, rate: float) -> None:
    """Hold record ``i`` back until its slot at ``rate`` records/s (0: no pacing)."""
    if rate > 0:
        delay = started + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def summary(records: int, replicated: float, direct: float, latencies: list[float], rate: float) -> dict[str, Any]:
    return {
        "records": records,
        "replicated_per_s": round(replicated, 1),
        "direct_produce_per_s": round(direct, 1),
        "copy_ratio": round(replicated / direct, 3),
        "latency_ms": percentiles(latencies),
        "latency_rate_per_s": rate,
        "latency_records": len(latencies),
    }


def bench_kafka(rc: RefCluster, records: int, latency_records: int, rate: float) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    a, b = rc.cluster_spec("kafka-a"), rc.cluster_spec("kafka-b")
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    admins = [AdminClient({"bootstrap.servers": s.url}) for s in (a, b)]
    for admin in admins:
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(10)

    def produce(spec: Any, name: str, like_replicator: bool, count: int = records, rate: float = 0.0) -> float:
        extra = {"acks": "all", "max.in.flight.requests.per.connection": 1} if like_replicator else {}
        producer = Producer({"bootstrap.servers": spec.url, **spec.client_config("producer"), **extra})
        started = time.perf_counter()
        for i in range(count):
            pace(started, i, rate)
            while True:
                try:
                    producer.produce(
                        name, value=b"x" * 100, partition=i % 4, headers=[("sent-ns", str(time.time_ns()).encode())]
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
        assert producer.flush(60) == 0
        return time.perf_counter() - started

    def copies(name: str, count: int, label: str, since_ns: int = 0) -> tuple[list[float], float]:
        consumer = Consumer(
            {
                "bootstrap.servers": b.url,
                **b.client_config("consumer"),
                "group.id": "__bench",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(f"kafka-a.{name}", p, 0) for p in range(4)])
        latencies: list[float] = []
        deadline = time.monotonic() + 90
        while len(latencies) < count and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.01):
                if msg.error() is None:
                    sent = int(dict(msg.headers() or [])["sent-ns"] or 0)
                    if sent >= since_ns:  # earlier records (the warm-up) are not timed
                        latencies.append((time.time_ns() - sent) / 1e6)
            progress(label, len(latencies), count)
        consumer.close()
        assert len(latencies) >= count, f"only {len(latencies)} of {count} copies within 90 s"
        return latencies, time.time()

    # Baseline: the replicator's producer settings (acks=all, one request in flight), to the standby.
    direct_s = produce(b, f"direct-{topic}", like_replicator=True)
    first_send = time.time()
    produce(a, topic, like_replicator=False)
    _, last_copy = copies(topic, records, "kafka burst copies")
    paced = f"{topic}-paced"
    for admin in admins[:1]:
        admin.create_topics([NewTopic(paced, num_partitions=4, replication_factor=1)])[paced].result(10)
    produce(a, paced, False, 4)  # warm-up: the replicator discovers the topic before timing starts
    copies(paced, 4, "kafka warm-up")
    timed_from = time.time_ns()
    sender = threading.Thread(target=produce, args=(a, paced, False, latency_records, rate))
    sender.start()  # read while the paced records are still being sent
    latencies, _ = copies(paced, latency_records, "kafka paced copies", since_ns=timed_from)
    sender.join()
    return summary(records, records / (last_copy - first_send), records / direct_s, latencies, rate)


def bench_pulsar(rc: RefCluster, records: int, latency_records: int, rate: float) -> dict[str, Any]:
    import pulsar

    quiet = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    a = pulsar.Client(rc.cluster_spec("pulsar-a").url, logger=quiet)
    b = pulsar.Client(rc.cluster_spec("pulsar-b").url, logger=quiet)
    topic = f"persistent://public/default/bench-{uuid.uuid4().hex[:6]}"
    with ConfigCenter.open(rc.settings()) as center:
        center.register_topic("pulsar-a", topic)

    def produce(client: Any, name: str, count: int = records, rate: float = 0.0) -> float:
        producer = client.create_producer(
            name, batching_enabled=True, batching_max_publish_delay_ms=1, block_if_queue_full=True
        )
        failures: list[Any] = []
        started = time.perf_counter()
        for i in range(count):
            pace(started, i, rate)
            producer.send_async(
                b"x" * 100,
                lambda res, _mid: failures.append(res) if res != pulsar.Result.Ok else None,
                properties={"sent-ns": str(time.time_ns())},
            )
        producer.flush()
        assert not failures, failures[:3]
        return time.perf_counter() - started

    def copies(name: str, count: int, label: str, send: Any) -> tuple[list[float], float]:
        consumer = b.subscribe(name, "bench", initial_position=pulsar.InitialPosition.Earliest,
                               batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(1000, -1, 10))  # fmt: skip
        sender = threading.Thread(target=send)
        sender.start()  # read while the records are still being sent
        latencies: list[float] = []
        deadline = time.monotonic() + 90
        while len(latencies) < count and time.monotonic() < deadline:
            for msg in consumer.batch_receive():
                latencies.append((time.time_ns() - int(msg.properties()["sent-ns"])) / 1e6)
                consumer.acknowledge(msg)
            progress(label, len(latencies), count)
        done = time.time()
        sender.join()
        consumer.close()
        assert len(latencies) >= count, f"only {len(latencies)} of {count} copies within 90 s"
        return latencies, done

    direct_s = produce(b, f"{topic}-direct")
    first_send = time.time()
    _, last_copy = copies(topic, records, "pulsar burst copies", lambda: produce(a, topic))
    paced = f"{topic}-paced"
    with ConfigCenter.open(rc.settings()) as center:
        center.register_topic("pulsar-a", paced)
    copies(paced, 4, "pulsar warm-up", lambda: produce(a, paced, count=4))  # the replicator finds the topic
    latencies, _ = copies(paced, latency_records, "pulsar paced copies",
                          lambda: produce(a, paced, count=latency_records, rate=rate))  # fmt: skip
    a.close()
    b.close()
    return summary(records, records / (last_copy - first_send), records / direct_s, latencies, rate)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("kafka", "pulsar", "both"), default="both")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--latency-records", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=500.0, help="records/s of the paced latency run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp, RefCluster(tmp, Ports.free()) as rc:
        if args.system in ("kafka", "both"):
            result["kafka"] = bench_kafka(rc, args.records, args.latency_records, args.rate)
        if args.system in ("pulsar", "both"):
            result["pulsar"] = bench_pulsar(rc, args.records, args.latency_records, args.rate)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for system, r in result.items():
            lat = r["latency_ms"]
            print(
                f"{system}: {r['replicated_per_s']:.0f} copies/s ({r['copy_ratio']:.2f}x direct produce "
                f"{r['direct_produce_per_s']:.0f}/s); at {r['latency_rate_per_s']:.0f}/s latency "
                f"p50 {lat['p50']} ms p99 {lat['p99']} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
