"""SDK vs raw client throughput on the reference cluster, measured in the same run.

    python bench/throughput.py --system kafka [--records N] [--size BYTES] [--rounds R] [--json]

Starts its own reference cluster on free loopback ports. Each round writes N records with
the raw confluent-kafka Producer and with hotstandby's Producer (route ``orders`` on kafka-a),
then reads each topic back with the raw Consumer and with hotstandby's Consumer — same broker,
same client settings (the reference cluster's), raw and SDK alternating so that the noise of
this shared machine hits both. Produce rate: records from the first send to the last delivery
report. Consume rate: from the first record received to the last (the group join, seconds on
the reference broker, is left out for both). Ratios are SDK / raw of the per-round medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

from hotstandby.logs import configure
from hotstandby.refcluster import Ports, RefCluster


def _kafka(rc: RefCluster, records: int, size: int, rounds: int) -> dict[str, Any]:
    from confluent_kafka import Consumer as RawConsumer
    from confluent_kafka import Producer as RawProducer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from hotstandby.adapters.kafka import Consumer, Producer

    spec = rc.cluster_spec("kafka-a")
    sdk_base = {"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
                "hotstandby.namespace": rc.namespace}  # fmt: skip
    raw_base = {"bootstrap.servers": spec.url}
    payload = b"x" * size
    admin = AdminClient(raw_base)

    def topic() -> str:
        name = f"bench-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, num_partitions=4, replication_factor=1)])[name].result(15)
        return name

    def produce(producer: Any, name: str) -> float:
        started = time.perf_counter()
        for i in range(records):
            while True:
                try:
                    producer.produce(name, value=payload, key=str(i).encode())
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if producer.flush(120) != 0:
            raise RuntimeError(f"{name}: records still undelivered after 120 s")
        return records / (time.perf_counter() - started)

    def consume(consumer: Any, name: str) -> float:
        consumer.subscribe([name])
        first = None
        count = 0
        deadline = time.monotonic() + 120
        while count < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: {count} of {records} records within 120 s")
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            first = first or time.perf_counter()
            count += 1
        assert first is not None
        return (records - 1) / max(time.perf_counter() - first, 1e-9)

    rates: dict[str, list[float]] = {"raw_produce": [], "sdk_produce": [], "raw_consume": [], "sdk_consume": []}
    # Round 0 warms the broker and both clients up and is not counted.
    for r in range(rounds + 1):
        for kind in ("raw", "sdk") if r % 2 == 0 else ("sdk", "raw"):
            name = topic()
            if kind == "raw":
                rates["raw_produce"].append(produce(RawProducer({**raw_base, **spec.client_config("producer")}), name))
                consumer = RawConsumer({**raw_base, **spec.client_config("consumer"), "group.id": f"g-{name}",
                                        "auto.offset.reset": "earliest"})  # fmt: skip
            else:
                producer = Producer(sdk_base)
                try:
                    rates["sdk_produce"].append(produce(producer, name))
                finally:
                    producer.close()
                consumer = Consumer({**sdk_base, "group.id": f"g-{name}"})
            try:
                rates[f"{kind}_consume"].append(consume(consumer, name))
            finally:
                consumer.close()
            print(f"round {r}/{rounds} {kind}: produce {rates[f'{kind}_produce'][-1]:,.0f}/s, "
                  f"consume {rates[f'{kind}_consume'][-1]:,.0f}/s", file=sys.stderr)  # fmt: skip
            if r == 0:  # warm-up
                for series in rates.values():
                    series.clear()
    med = {k: statistics.median(v) for k, v in rates.items()}
    return {
        "system": "kafka",
        "records": records,
        "record_bytes": size,
        "rounds": rounds,
        "produce_ratio": round(med["sdk_produce"] / med["raw_produce"], 3),
        "consume_ratio": round(med["sdk_consume"] / med["raw_consume"], 3),
        **{f"{k}_per_s": round(v, 1) for k, v in med.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("kafka",), default="kafka")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes per record")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure("warning")
    with tempfile.TemporaryDirectory(prefix="hs-bench-") as tmp, RefCluster(tmp, Ports.free()) as rc:
        result = _kafka(rc, args.records, args.size, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"produce: SDK {result['sdk_produce_per_s']:,.0f}/s vs raw {result['raw_produce_per_s']:,.0f}/s "
              f"-> ratio {result['produce_ratio']}")  # fmt: skip
        print(f"consume: SDK {result['sdk_consume_per_s']:,.0f}/s vs raw {result['raw_consume_per_s']:,.0f}/s "
              f"-> ratio {result['consume_ratio']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
