"""Flapping: a route flipped back and forth faster than a switch completes, under Kafka traffic.

    python bench/flapping.py [--flips 20] [--seconds 10] [--rate 500] [--brokers lite|apache]
                             [--refcluster-dir DIR] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up). An SDK
producer writes ``--rate`` records/s to a fresh topic of route ``orders`` for 3 s, then for the
``--seconds`` in which the route is flipped ``--flips`` times (kafka-a <-> kafka-b, at equal
intervals, not waiting for any client to move), then for 5 s more; two SDK consumers of one
group read the topic and its remote copies. What it prints:

* ``resent_per_produced``: records the producer sent again in its switches ÷ records produced
  (the baseline the figure is read against: what the application wrote); beside it the
  window records not sent again, because replication had copied them (``trimmed``) or the
  cluster moved to held them from before (``held``);
* ``longest_without_delivery_s``: the longest stretch, from the first flip to the end of
  producing, in which no record was acknowledged to the producer (both clusters answer all
  along);
* ``longest_without_consumption_s``: the same for records the consumers received;
* ``switches``: the producer's completed switches (flips that came while a switch ran are
  coalesced: only the newest is carried out);
* ``lost`` and ``duplicated``: records never received and received more than once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.switch_events import SwitchEvent, SwitchPhase
from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster

ROUTE = "orders"
_WARM_S = 3.0
_TAIL_S = 5.0
_SETTLE_S = 60.0  # at most, for the consumers to receive every record after producing stops


def _topic_everywhere(rc: RefCluster, topic: str) -> None:
    """``topic`` on both clusters and its remote copies on each (as in production, where a topic
    is replicated long before anyone fails over)."""
    for broker in ("kafka-a", "kafka-b"):
        admin = shared_admin(rc.cluster_spec(broker))
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(30)
    for source, target in (("kafka-a", "kafka-b"), ("kafka-b", "kafka-a")):
        copy = f"{source}{rc.link(source, target).separator}{topic}"
        admin = shared_admin(rc.cluster_spec(target))

        def there(admin: Any = admin, copy: str = copy) -> bool:
            try:
                found = admin.list_topics(copy, timeout=5).topics.get(copy)
            except KafkaException:
                return False
            return found is not None and found.error is None

        if not wait_until(there, 60, first=0.2, most=0.5):
            raise RuntimeError(f"no copy {copy} on {target} within 60 s")


def _longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest stretch within [start, end] without one of ``times``."""
    inside = sorted(t for t in times if start <= t <= end)
    edges = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def measure(
    rc: RefCluster, flips: int = 20, seconds: float = 10.0, rate: int = 500, skew_ms: int | None = None
) -> dict[str, Any]:
    """The flapping run on ``rc`` (see the module doc)."""
    center = ConfigCenter.open(replace(rc.settings("sre"), namespace=rc.namespace))
    topic = f"flap-{uuid.uuid4().hex[:8]}"
    _topic_everywhere(rc, topic)
    base = {"hotstandby.route": ROUTE, "hotstandby.namespace": rc.namespace,
            "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}"}  # fmt: skip
    events: list[SwitchEvent] = []
    settings: dict[str, Any] = {**base, "hotstandby.client.id": "flap-producer", "hotstandby.on_switch": events.append}
    if skew_ms is not None:
        settings["hotstandby.timestamp.skew.ms"] = skew_ms
    producer = Producer(settings)
    total = int(rate * (_WARM_S + seconds + _TAIL_S))
    delivered: list[float] = []
    received: dict[int, int] = {}
    received_at: list[float] = []
    lock = threading.Lock()
    stop = threading.Event()

    def consume(index: int) -> None:
        consumer = Consumer({**base, "hotstandby.client.id": f"flap-consumer-{index}", "group.id": f"g-{topic}",
                             "auto.commit.interval.ms": 200})  # fmt: skip
        try:
            consumer.subscribe([topic])
            while not stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None or msg.error() is not None:
                    continue
                with lock:
                    seq = int(msg.value() or b"-1")
                    received[seq] = received.get(seq, 0) + 1
                    received_at.append(time.monotonic())
        finally:
            consumer.close()

    consumers = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(2)]
    for thread in consumers:
        thread.start()

    def report(err: Any, _msg: Any) -> None:
        if err is None:
            delivered.append(time.monotonic())

    def flap(began: float) -> None:
        for k in range(flips):
            stop.wait(max(began + _WARM_S + k * seconds / flips - time.monotonic(), 0))
            route = center.route(ROUTE)
            center.switch(ROUTE, next(c for c in route.clusters if c != route.active), reason=f"flapping {k + 1}")

    began = time.monotonic()
    flipper = threading.Thread(target=flap, args=(began,), daemon=True)
    flipper.start()
    try:
        for seq in range(total):
            stop.wait(max(began + seq / rate - time.monotonic(), 0))
            while True:
                try:
                    producer.produce(topic, value=str(seq).encode(), key=str(seq).encode(), on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        produced_until = time.monotonic()
        if producer.flush(120) > 0:
            raise RuntimeError(f"{len(producer)} records undelivered 120 s after the last was produced")
        flipper.join(5)
        wait_until(lambda: len(received) >= total, _SETTLE_S, first=0.2, most=0.5)
        stop.wait(2.0)  # a window in which a late duplicate is still counted
    finally:
        stop.set()
        for thread in consumers:
            thread.join(15)
        resent, trimmed, held = producer.resent, producer.trimmed, producer.held
        producer.close()
        center.close()
    flapping_from = began + _WARM_S
    with lock:
        lost = sum(1 for seq in range(total) if seq not in received)
        duplicated = sum(n - 1 for n in received.values() if n > 1)
        consumed_gap = _longest_gap(received_at, flapping_from, produced_until)
    completed = [e for e in events if e.phase == SwitchPhase.COMPLETED]
    return {
        "brokers": rc.brokers,
        "flips": flips,
        "seconds": seconds,
        "rate": rate,
        "timestamp_skew_ms": skew_ms,
        "produced": total,
        "resent": resent,
        "trimmed": trimmed,
        "held": held,
        "resent_per_produced": round(resent / total, 3),
        "switches": len(completed),
        "switch_s": [round(e.duration_s or 0.0, 2) for e in completed],
        "longest_without_delivery_s": round(_longest_gap(delivered, flapping_from, produced_until), 2),
        "longest_without_consumption_s": round(consumed_gap, 2),
        "lost": lost,
        "duplicated": duplicated,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flips", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0, help="over which the flips are spread")
    parser.add_argument("--rate", type=int, default=500, help="records/s offered by the producer")
    parser.add_argument("--skew-ms", type=int, help="the producer's hotstandby.timestamp.skew.ms (default: the SDK's)")
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        result = measure(rc, args.flips, args.seconds, args.rate, args.skew_ms)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['flips']} flips in {result['seconds']} s at {result['rate']}/s on {result['brokers']}: "
              f"re-sent / produced {result['resent_per_produced']} ({result['resent']} of {result['produced']}, "
              f"not re-sent: {result['trimmed']} replicated, {result['held']} held from before), {result['switches']} switches; longest without "
              f"delivery {result['longest_without_delivery_s']} s, without consumption "
              f"{result['longest_without_consumption_s']} s; lost {result['lost']}, "
              f"duplicated {result['duplicated']}")  # fmt: skip
    return 0 if result["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
