"""CPU per produced record of designs for the Kafka producer's replay window, against the raw
client in the same run (issue: pay for failover only around a failover).

    python bench/produce_designs.py [--brokers lite|apache] [--refcluster-dir DIR]
                                    [--records N] [--rounds R] [--every K] [--json]

Each round writes N records of 100 bytes with each client in turn, into a new topic of one
partition per client and round, and measures the process's CPU time from the first
``produce`` to the end of ``flush`` (every thread: librdkafka's own included). Round 0 warms
up and is not counted; figures are medians over rounds, ``ratio`` is raw ÷ client (1.0: as
cheap as raw).

* ``raw`` — confluent-kafka's Producer, no delivery callback: a report only flips the GIL.
* ``floor`` — what the SDK's design rests on today: an ``hs-id`` header, the record kept,
  and a Python delivery report per record that releases it (``floor_clients.FloorProducer``).
* ``marker`` — a design without that premise: the same header and record kept, but a
  delivery report only on every K-th record of a partition (and the last one before a
  ``flush``). Under ``enable.idempotence`` with ``enable.gapless.guarantee``, librdkafka
  reports a partition's records in order and turns any gap into a fatal error, so a marker's
  success releases every record before it.
* ``sdk`` — hotstandby's Producer (route ``orders`` on kafka-a), idempotence on, as today.

All four run with ``enable.idempotence`` on, so the comparison is of the Python side alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import uuid
from collections import deque
from functools import partial
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster
from confluent_kafka import Producer as RawProducer
from confluent_kafka.admin import AdminClient, NewTopic
from floor_clients import FloorProducer

from hotstandby.adapters.kafka import Producer
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.refcluster import RefCluster

_VALUE = b"x" * 100
_IDEMPOTENT = {"enable.idempotence": True, "linger.ms": 20, "queue.buffering.max.messages": 1_000_000}


class MarkerProducer:
    """The raw producer keeping records for a replay as a wrapper would, with a delivery
    report on every ``every``-th record of a partition only (see the module doc)."""

    def __init__(self, config: dict[str, Any], every: int) -> None:
        self._raw = RawProducer({**config, "enable.gapless.guarantee": True, "error_cb": self._on_error})
        self._every = every
        self._session = new_session()
        self._sequence = 0
        self._kept: deque[tuple[int, str, bytes | None, bytes | None]] = deque()
        self.failed = 0
        self.fatal = False

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self.fatal = True

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None) -> None:
        seq = self._sequence
        headers = [(HEADER, RecordId(self._session, 0, seq).encode())]
        if seq % self._every:
            self._raw.produce(topic, value=value, key=key, partition=0, headers=headers)
        else:
            self._raw.produce(topic, value=value, key=key, partition=0, headers=headers,
                              on_delivery=partial(self._delivered, seq))  # fmt: skip
        self._sequence = seq + 1
        self._kept.append((seq, topic, key, value))

    def _delivered(self, seq: int, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1  # a gap is fatal under the gapless guarantee: everything kept is sent again
            return
        kept = self._kept
        while kept and kept[0][0] <= seq:
            kept.popleft()

    def poll(self, timeout: float) -> int:
        return int(self._raw.poll(timeout))

    def flush(self, timeout: float) -> int:
        left = int(self._raw.flush(timeout))
        if not left and not self.fatal:
            self._kept.clear()  # all reported, and no gap (it would have been fatal)
        return left or len(self._kept)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _write(client: Any, topic: str, records: int) -> float:
    """CPU µs per record to produce ``records`` and flush them."""
    start = _cpu()
    for i in range(records):
        client.produce(topic, value=_VALUE, key=b"k%d" % (i % 100))
        if i % 1000 == 999:
            client.poll(0)
    left = client.flush(120)
    if left:
        raise RuntimeError(f"{left} records not delivered within 120 s")
    return (_cpu() - start) * 1e6 / records


def measure(rc: RefCluster, records: int, rounds: int, every: int) -> dict[str, Any]:
    spec = rc.cluster_spec("kafka-a")
    config = {**spec.client_config("producer"), **_IDEMPOTENT, "bootstrap.servers": spec.url}
    clients: dict[str, Any] = {
        "raw": RawProducer(config),
        "floor": FloorProducer(RawProducer(config)),
        "marker": MarkerProducer(config, every),
        "sdk": Producer({**rc.client_config("app"), "hotstandby.route": "orders", **_IDEMPOTENT}),
    }
    marker: MarkerProducer = clients["marker"]
    figures: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for round_ in range(rounds + 1):
            for name, client in clients.items():
                topic = f"pd-{name}-{uuid.uuid4().hex[:6]}"
                _create(rc, topic)
                cost = _write(client, topic, records)
                if round_:
                    figures[name].append(cost)
                print(f"round {round_} {name}: {cost:.2f} µs/record", file=sys.stderr, flush=True)
    finally:
        clients["sdk"].close()
        clients.clear()  # the raw clients go before the cluster they talk to
    medians = {name: statistics.median(values) for name, values in figures.items()}
    return {
        "records": records,
        "rounds": rounds,
        "marker_every": every,
        "cpu_us_per_record": {name: round(v, 2) for name, v in medians.items()},
        "ratio": {name: round(medians["raw"] / v, 2) for name, v in medians.items()},
        "marker_failures": marker.failed,
    }


def _create(rc: RefCluster, topic: str) -> None:
    """``topic`` on kafka-a, one partition (the marker client writes partition 0)."""
    spec = rc.cluster_spec("kafka-a")
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_cluster_options(parser)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", type=int, default=256, help="records per delivery report (marker)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        result = measure(rc, args.records, args.rounds, args.every)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"CPU per record (µs), median of {args.rounds} rounds of {args.records} records; ratio raw ÷ client:")
    for name, cost in result["cpu_us_per_record"].items():
        print(f"  {name:7s} {cost:8.2f}   {result['ratio'][name]:.2f}")


if __name__ == "__main__":
    main()
