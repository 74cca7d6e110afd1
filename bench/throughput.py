"""SDK vs raw client throughput on the reference cluster, measured in the same run.

    python bench/throughput.py --system kafka|pulsar [--brokers lite|apache] [--refcluster-dir DIR]
                               [--records N] [--size BYTES] [--rounds R] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up); same broker, same client settings
(the reference cluster's) for both clients, raw and SDK alternating from round to round so
that the noise of this shared machine hits both; round 0 warms up and is not counted.

* Produce: each round writes N records with the raw confluent-kafka Producer and with
  hotstandby's Producer (route ``orders`` on kafka-a), each into a new topic (the reference
  broker slows down as a topic grows), taking turns in 10 slices (the broker's rate swings
  within seconds); a client's rate is N over the time of its slices, each from the first
  send to the last delivery report.
* Consume: each round reads the SDK's topics — every record it produced, with its ``hs-id``
  — once with the raw Consumer and once with hotstandby's Consumer, each in a new group,
  from the first record received to the last (the group join, seconds on the reference
  broker, is left out for both). Reading the same records makes the window long enough to
  measure and gives the SDK its full per-record work (identity decode, ledger lookup).
* A third client, *floor*, is the raw client doing the least any identity-keeping wrapper
  must per record, written in Python as the SDK is: send with an ``hs-id`` header, keep the
  record until a Python delivery report releases it; read the header, decode the identity,
  look it up in a set.

Pulsar: the same with pulsar-client's Producer and hotstandby's (route ``payments`` on
pulsar-a; batching on, queue blocking, for both), and consumers of a new Exclusive
subscription per round that acknowledge every message (the SDK stores its ledger every 100 ms
and then acknowledges on the broker); the SDK's topics are read one after the other. Its
floor sends each message with an ``hs-id`` property and reads each message's properties and
identity and looks it up in a set. For both systems, ``produce_floor_ratio`` and
``consume_floor_ratio`` (floor / raw) bound what the SDK's ratios can reach with the client
library in Python.

Ratios are the median over rounds of SDK / raw within the round (the broker slows down as it
holds more data, so figures drift over a run); the rates printed are per-kind medians. Beside
each rate, the process's CPU time per record over the same window (every thread: the client
library's own included), which depends much less on the machine's noise than the rates do:
``cpu_ratio`` is SDK / raw of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster
from floor_clients import FloorConsumer, FloorProducer

from hotstandby.failover.identity import HEADER, IdentityText, RecordId, new_session
from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster

_SLICES = 10  # produce turns per round and client


class _Spent:
    """Wall and CPU time (the whole process's) from its creation to :meth:`stop`."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


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

    def produce(producer: Any, name: str, first: int, count: int) -> tuple[float, float]:
        """Seconds (wall, CPU) to send records ``first`` .. ``first + count - 1`` and have them
        acknowledged."""
        started = _Spent()
        for i in range(first, first + count):
            while True:
                try:
                    producer.produce(name, value=payload, key=str(i).encode())
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if producer.flush(120) != 0:
            raise RuntimeError(f"{name}: records still undelivered after 120 s")
        return started.stop()

    def consume(consumer: Any, names: list[str], expected: int) -> tuple[float, float]:
        consumer.subscribe(names)
        first = None
        count = 0
        deadline = time.monotonic() + 120
        while count < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{names}: {count} of {expected} records within 120 s")
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            first = first or _Spent()
            count += 1
        assert first is not None
        wall, cpu = first.stop()
        return (expected - 1) / max(wall, 1e-9), cpu / (expected - 1)

    kinds = ("raw", "sdk", "floor")
    rates: dict[str, list[float]] = {f"{kind}_{what}": [] for kind in kinds for what in ("produce", "consume")}
    cpu: dict[str, list[float]] = {key: [] for key in rates}  # seconds per record
    sdk_topics: list[str] = []
    # Round 0 warms the broker and the clients up and is not counted. Within a round the
    # clients take turns slice by slice: the reference broker's rate swings by 2x within
    # seconds, and all must see the same broker.
    slice_size = max(records // _SLICES, 1)
    for _ in range(rounds + 1):
        producers = {
            "raw": RawProducer({**raw_base, **spec.client_config("producer")}),
            "sdk": Producer(sdk_base),
            "floor": FloorProducer(RawProducer({**raw_base, **spec.client_config("producer")})),
        }
        topics = {kind: topic() for kind in kinds}
        sdk_topics.append(topics["sdk"])
        spent = {kind: [0.0, 0.0] for kind in kinds}
        try:
            for n, first in enumerate(range(0, records, slice_size)):
                count = min(slice_size, records - first)
                for kind in kinds[n % 3 :] + kinds[: n % 3]:  # each goes first in turn
                    wall, used = produce(producers[kind], topics[kind], first, count)
                    spent[kind][0] += wall
                    spent[kind][1] += used
        finally:
            producers["sdk"].close()
        for kind in kinds:
            rates[f"{kind}_produce"].append(records / spent[kind][0])
            cpu[f"{kind}_produce"].append(spent[kind][1] / records)
    written = records * (rounds + 1)
    for r in range(rounds + 1):
        for kind in kinds[r % 3 :] + kinds[: r % 3]:
            group = f"g-{kind}-{r}"
            raw_config = {
                **raw_base,
                **spec.client_config("consumer"),
                "group.id": group,
                "auto.offset.reset": "earliest",
            }
            if kind == "raw":
                consumer: Any = RawConsumer(raw_config)
            elif kind == "floor":
                consumer = FloorConsumer(RawConsumer(raw_config))
            else:
                consumer = Consumer({**sdk_base, "group.id": group})
            try:
                rate, used = consume(consumer, sdk_topics, written)
                rates[f"{kind}_consume"].append(rate)
                cpu[f"{kind}_consume"].append(used)
            finally:
                consumer.close()
    return _summary("kafka", rates, cpu, records, written, size, rounds)


def _summary(
    system: str,
    rates: dict[str, list[float]],
    cpu: dict[str, list[float]],
    records: int,
    written: int,
    size: int,
    rounds: int,
) -> dict[str, Any]:
    kinds = [kind for kind in ("raw", "sdk", "floor") if rates.get(f"{kind}_produce")]
    for kind in kinds:
        print(f"{kind}: produce {', '.join(f'{x:,.0f}' for x in rates[f'{kind}_produce'])}/s; "
              f"consume {', '.join(f'{x:,.0f}' for x in rates[f'{kind}_consume'])}/s (round 0 first)",
              file=sys.stderr)  # fmt: skip
    med = {k: statistics.median(v[1:]) for k, v in rates.items()}  # round 0 was the warm-up

    def paired(what: str, kind: str = "sdk") -> float:
        # The reference broker slows down as it holds more data, so rates drift over a run:
        # compare each SDK figure with the raw one of the same round, then take the median.
        return statistics.median(
            s / r for s, r in zip(rates[f"{kind}_{what}"][1:], rates[f"raw_{what}"][1:], strict=True)
        )

    floor = {}
    if "floor" in kinds:
        floor = {f"{what}_floor_ratio": round(paired(what, "floor"), 3) for what in ("produce", "consume")}
    return {
        "system": system,
        "records": records,
        "consumed_records": written,
        "record_bytes": size,
        "rounds": rounds,
        "produce_ratio": round(paired("produce"), 3),
        "consume_ratio": round(paired("consume"), 3),
        **floor,
        **{f"{k}_per_s": round(v, 1) for k, v in med.items()},
        **{f"{k}_cpu_us_per_record": round(statistics.median(v[1:]) * 1e6, 2) for k, v in cpu.items()},
        **{f"{what}_cpu_ratio": round(statistics.median(cpu[f"sdk_{what}"][1:]) /
                                      statistics.median(cpu[f"raw_{what}"][1:]), 3)
           for what in ("produce", "consume")},
    }  # fmt: skip


def _pulsar(rc: RefCluster, records: int, size: int, rounds: int) -> dict[str, Any]:
    import pulsar

    from hotstandby.adapters.pulsar import Client

    # pulsar-client's C++ file logger: a Python logger is called back for every message it
    # logs, which costs more than the send itself (both clients get the same).
    quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
    url = rc.cluster_spec("pulsar-a").url
    raw_client = pulsar.Client(url, logger=quiet)
    sdk_client = Client("payments", etcd=f"127.0.0.1:{rc.ports.etcd}", namespace=rc.namespace, logger=quiet)
    payload = b"x" * size
    producer_kwargs = {"batching_enabled": True, "block_if_queue_full": True}

    def topic() -> str:
        return f"persistent://public/default/bench-{uuid.uuid4().hex[:8]}"

    def produce(producer: Any, identities: IdentityText | None = None) -> tuple[float, float]:
        done = threading.Event()
        acked = [0]

        def callback(res: Any, _mid: Any) -> None:
            acked[0] += 1
            if acked[0] == records:
                done.set()

        started = _Spent()
        if identities is None:
            for i in range(records):
                producer.send_async(payload, callback, partition_key=str(i))
        else:  # the floor: what the SDK adds at the least, an identity per message
            for i in range(records):
                producer.send_async(payload, callback, {HEADER: identities.text(0, i)}, partition_key=str(i))
        producer.flush()
        if not done.wait(120):
            raise RuntimeError(f"{acked[0]} of {records} acknowledged within 120 s")
        wall, used = started.stop()
        producer.close()
        return records / wall, used / records

    def consume(client: Any, names: list[str], subscription: str, *, floor: bool = False) -> tuple[float, float]:
        busy = used = 0.0
        for name in names:
            consumer = client.subscribe(name, subscription, initial_position=pulsar.InitialPosition.Earliest)
            first, count = None, 0
            seen: set[RecordId] = set()
            deadline = time.monotonic() + 120
            while count < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: {count} of {records} messages within 120 s")
                try:
                    msg = consumer.receive(timeout_millis=500)
                except pulsar.Timeout:
                    continue
                first = first or _Spent()
                if floor:  # the least a filter does: read the identity, look it up
                    rid = RecordId.decode(bytes.fromhex(msg.properties()[HEADER]))
                    if rid in seen:
                        continue
                    seen.add(rid)
                consumer.acknowledge(msg)
                count += 1
            assert first is not None
            wall, cpu_s = first.stop()
            busy, used = busy + wall, used + cpu_s
            consumer.close()
        counted = records * len(names) - len(names)
        return counted / max(busy, 1e-9), used / counted

    kinds = ("raw", "sdk", "floor")
    rates: dict[str, list[float]] = {f"{kind}_{what}": [] for kind in kinds for what in ("produce", "consume")}
    cpu: dict[str, list[float]] = {key: [] for key in rates}
    sdk_topics: list[str] = []
    identities = IdentityText(new_session())
    try:
        for r in range(rounds + 1):  # round 0 warms up
            for kind in kinds[r % 3 :] + kinds[: r % 3]:  # each goes first in turn
                if kind == "sdk":
                    sdk_topics.append(topic())
                    rate, used = produce(sdk_client.create_producer(sdk_topics[-1], **producer_kwargs))
                else:
                    made = raw_client.create_producer(topic(), **producer_kwargs)
                    rate, used = produce(made, identities if kind == "floor" else None)
                rates[f"{kind}_produce"].append(rate)
                cpu[f"{kind}_produce"].append(used)
        for r in range(rounds + 1):
            for kind in kinds[r % 3 :] + kinds[: r % 3]:
                client = sdk_client if kind == "sdk" else raw_client
                rate, used = consume(client, sdk_topics, f"s-{kind}-{r}", floor=kind == "floor")
                rates[f"{kind}_consume"].append(rate)
                cpu[f"{kind}_consume"].append(used)
    finally:
        sdk_client.close()
        raw_client.close()
    return _summary("pulsar", rates, cpu, records, records * len(sdk_topics), size, rounds)


def measure(rc: RefCluster, system: str, records: int = 5_000, size: int = 100, rounds: int = 5) -> dict[str, Any]:
    """Produce and consume rates and CPU per record, raw and SDK, of ``system`` on ``rc``."""
    return (_kafka if system == "kafka" else _pulsar)(rc, records, size, rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("kafka", "pulsar"), default="kafka")
    parser.add_argument("--records", type=int, default=5_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes per record")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        result = measure(rc, args.system, args.records, args.size, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"produce: SDK {result['sdk_produce_per_s']:,.0f}/s vs raw {result['raw_produce_per_s']:,.0f}/s "
              f"-> ratio {result['produce_ratio']}; CPU per record {result['sdk_produce_cpu_us_per_record']} "
              f"vs {result['raw_produce_cpu_us_per_record']} us -> {result['produce_cpu_ratio']}")  # fmt: skip
        print(f"consume: SDK {result['sdk_consume_per_s']:,.0f}/s vs raw {result['raw_consume_per_s']:,.0f}/s "
              f"-> ratio {result['consume_ratio']}; CPU per record {result['sdk_consume_cpu_us_per_record']} "
              f"vs {result['raw_consume_cpu_us_per_record']} us -> {result['consume_cpu_ratio']}")  # fmt: skip
        if "consume_floor_ratio" in result:
            print(f"floor (raw client + identities): produce {result['produce_floor_ratio']}, "
                  f"consume {result['consume_floor_ratio']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
