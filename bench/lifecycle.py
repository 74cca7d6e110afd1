"""Lifecycle cost: creating, using once and closing a client, raw vs SDK, in the same run.

    python bench/lifecycle.py [--reps N] [--system kafka|pulsar|all] [--json]

Starts its own reference cluster on free loopback ports. Each repetition runs the raw client
and the SDK facade one after the other (which goes first alternates), on the same broker with
the same client settings (the reference cluster's), and times each step (the first repetition
warms up — imports, first connections — and is not counted):

* Kafka Producer: create; first produce + flush (delivery acknowledged); close.
* Kafka Consumer (a new group each time, on a topic that holds records): create; subscribe;
  first record (the group join — about 2 s on the reference broker — is most of it); close.
  Then close beside an idle member: two consumers of a new group each hold a partition, the
  first one closes while the second does not poll (as an application closing its consumers
  one after the other); the second one's close is not timed.
* Pulsar Client: create; create_producer; subscribe (a new subscription); close (the client,
  and with it its producer and consumer).

For each step it prints the median and p90 over the repetitions, the ratio SDK / raw of the
medians, and for the SDK the etcd requests made on the caller's thread (median): the round
trips a step waits for. Requests of the SDK's background threads (presence keep-alive, the
watches) are not counted: nobody waits for them.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hotstandby.configcenter.etcd import EtcdStore
from hotstandby.logs import configure
from hotstandby.refcluster import Ports, RefCluster

_FIRST_RECORD_S = 60.0


class EtcdCalls:
    """Counts the etcd requests made on the main thread (every request goes through
    :meth:`EtcdStore.call`)."""

    def __init__(self) -> None:
        self.count = 0
        self._original = EtcdStore.call

    def install(self) -> None:
        original, calls = self._original, self

        def call(store: EtcdStore, fn: Callable[[Any], Any]) -> Any:
            if threading.current_thread() is threading.main_thread():
                calls.count += 1
            return original(store, fn)

        EtcdStore.call = call  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        EtcdStore.call = self._original  # type: ignore[method-assign]


class Steps:
    """Times (and etcd requests) per (kind, step) over the repetitions."""

    def __init__(self, etcd: EtcdCalls) -> None:
        self.etcd = etcd
        self.seconds: dict[tuple[str, str], list[float]] = {}
        self.requests: dict[tuple[str, str], list[int]] = {}
        self.order: list[str] = []

    @contextmanager
    def step(self, kind: str, name: str) -> Iterator[None]:
        if name not in self.order:
            self.order.append(name)
        before = self.etcd.count
        started = time.perf_counter()
        yield
        self.seconds.setdefault((kind, name), []).append(time.perf_counter() - started)
        self.requests.setdefault((kind, name), []).append(self.etcd.count - before)

    def summary(self) -> list[dict[str, Any]]:
        rows = []
        for name in self.order:
            raw, sdk = self.seconds[("raw", name)], self.seconds[("sdk", name)]
            rows.append({
                "step": name,
                "raw_median_ms": _ms(statistics.median(raw)), "raw_p90_ms": _ms(_p90(raw)),
                "sdk_median_ms": _ms(statistics.median(sdk)), "sdk_p90_ms": _ms(_p90(sdk)),
                "ratio": round(statistics.median(sdk) / max(statistics.median(raw), 1e-6), 2),
                "sdk_etcd_requests": statistics.median(self.requests[("sdk", name)]),
            })  # fmt: skip
        return rows


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(sorted(values), n=10, method="inclusive")[8]


def _kafka(rc: RefCluster, reps: int, steps: Steps) -> None:
    from confluent_kafka import Consumer as RawConsumer
    from confluent_kafka import Producer as RawProducer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from hotstandby.adapters.kafka import Consumer, Producer

    spec = rc.cluster_spec("kafka-a")
    sdk_base = {"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
                "hotstandby.namespace": rc.namespace}  # fmt: skip
    raw_base: dict[str, Any] = {"bootstrap.servers": spec.url}
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(raw_base)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)

    def producer_cycle(kind: str) -> None:
        with steps.step(kind, "kafka producer: create"):
            if kind == "raw":
                producer: Any = RawProducer({**raw_base, **spec.client_config("producer")})
            else:
                producer = Producer(sdk_base)
        with steps.step(kind, "kafka producer: produce + flush"):
            producer.produce(topic, value=b"x", key=b"k")
            if producer.flush(30) != 0:
                raise RuntimeError("the first record was not delivered within 30 s")
        with steps.step(kind, "kafka producer: close"):
            if kind == "raw":
                producer.flush(10)  # what the SDK's close does; confluent_kafka's Producer has no close
                del producer
            else:
                producer.close()

    def new_consumer(kind: str, group: str) -> Any:
        if kind == "raw":
            return RawConsumer({**raw_base, **spec.client_config("consumer"), "group.id": group,
                                "auto.offset.reset": "earliest"})  # fmt: skip
        return Consumer({**sdk_base, "group.id": group})  # reads from the earliest offset by default

    def consumer_cycle(kind: str) -> None:
        group = f"g-{kind}-{uuid.uuid4().hex[:8]}"
        with steps.step(kind, "kafka consumer: create"):
            consumer = new_consumer(kind, group)
        with steps.step(kind, "kafka consumer: subscribe"):
            consumer.subscribe([topic])
        with steps.step(kind, "kafka consumer: first record"):
            deadline = time.monotonic() + _FIRST_RECORD_S
            while True:
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is None:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no record within {_FIRST_RECORD_S} s")
        with steps.step(kind, "kafka consumer: close"):
            consumer.close()

    for r in range(reps + 1):
        for kind in ("raw", "sdk") if r % 2 == 0 else ("sdk", "raw"):
            producer_cycle(kind)
    pair_topic = f"bench-pair-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(pair_topic, num_partitions=2, replication_factor=1)])[pair_topic].result(15)

    def pair_cycle(kind: str) -> None:
        group = f"g-{kind}-{uuid.uuid4().hex[:8]}"
        first, second = new_consumer(kind, group), new_consumer(kind, group)
        first.subscribe([pair_topic])
        second.subscribe([pair_topic])
        deadline = time.monotonic() + _FIRST_RECORD_S
        while not (first.assignment() and second.assignment()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no partition for each member within {_FIRST_RECORD_S} s")
            first.poll(0.1)
            second.poll(0.1)
        with steps.step(kind, "kafka consumer: close beside an idle member"):
            first.close()
        second.close()

    for r in range(reps + 1):
        for kind in ("raw", "sdk") if r % 2 == 0 else ("sdk", "raw"):
            consumer_cycle(kind)
    for r in range(reps + 1):
        for kind in ("raw", "sdk") if r % 2 == 0 else ("sdk", "raw"):
            pair_cycle(kind)


def _pulsar(rc: RefCluster, reps: int, steps: Steps) -> None:
    import pulsar

    from hotstandby.adapters.pulsar import Client

    # pulsar-client's C++ logger writes every connection event; both clients get the same.
    quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
    url = rc.cluster_spec("pulsar-a").url
    topic = f"persistent://public/default/bench-{uuid.uuid4().hex[:8]}"

    def cycle(kind: str) -> None:
        with steps.step(kind, "pulsar client: create"):
            if kind == "raw":
                client: Any = pulsar.Client(url, logger=quiet)
            else:
                client = Client("payments", etcd=f"127.0.0.1:{rc.ports.etcd}", namespace=rc.namespace, logger=quiet)
        with steps.step(kind, "pulsar client: create_producer"):
            client.create_producer(topic)
        with steps.step(kind, "pulsar client: subscribe"):
            client.subscribe(topic, f"s-{kind}-{uuid.uuid4().hex[:8]}")
        with steps.step(kind, "pulsar client: close"):
            client.close()

    for r in range(reps + 1):
        for kind in ("raw", "sdk") if r % 2 == 0 else ("sdk", "raw"):
            cycle(kind)


def _drop_warmup(steps: Steps) -> None:
    """The first repetition of each cycle imports and connects everything for the first time:
    not counted."""
    for seconds in steps.seconds.values():
        del seconds[0]
    for requests in steps.requests.values():
        del requests[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--system", choices=("kafka", "pulsar", "all"), default="all")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3")
    configure("warning")
    etcd = EtcdCalls()
    steps = Steps(etcd)
    etcd.install()
    try:
        with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp, RefCluster(tmp, Ports.free()) as rc:
            if args.system in ("kafka", "all"):
                _kafka(rc, args.reps, steps)
            if args.system in ("pulsar", "all"):
                _pulsar(rc, args.reps, steps)
    finally:
        etcd.uninstall()
    _drop_warmup(steps)
    rows = steps.summary()
    if args.json:
        print(json.dumps({"reps": args.reps, "steps": rows}, indent=2))
        return 0
    print(f"{'step':44} {'raw p50':>9} {'raw p90':>9} {'sdk p50':>9} {'sdk p90':>9} {'sdk/raw':>8} {'etcd':>5}")
    for row in rows:
        print(f"{row['step']:44} {row['raw_median_ms']:9.1f} {row['raw_p90_ms']:9.1f} {row['sdk_median_ms']:9.1f} "
              f"{row['sdk_p90_ms']:9.1f} {row['ratio']:8.2f} {row['sdk_etcd_requests']:5g}")  # fmt: skip
    print(f"(ms over {args.reps} repetitions; etcd: requests the SDK made on the caller's thread, median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
