"""Pulsar re-read per flip: what a subscription reads again on the cluster it moves to.

    python bench/pulsar_reread.py [--flips 6] [--interval 6] [--rate 200] [--brokers lite|apache]
                                  [--refcluster-dir DIR] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up). A raw
pulsar-client producer writes ``--rate`` messages/s (keyed) to a fresh topic on pulsar-a all
along (geo-replication copies them to pulsar-b; a producer that followed the route would send
its replay window again at each flip, and its copies would be counted as re-read). For each
subscription type (Shared, Key_Shared, Failover) two SDK consumers read the topic, each in its
own subscription, acknowledging every message:

* *replicated*: subscribed as the SDK subscribes by default, with
  ``replicate_subscription_state_enabled=True``: Apache Pulsar carries the subscription's
  acknowledged position to the other cluster (a snapshot every second);
* *own cursor*: with it False (pulsar-client's default): on the cluster it
  moves to, the subscription resumes at the cursor it left there (at the earliest message the
  first time).

The route is flipped every ``--interval`` s, ``--flips`` times. Per flip and subscription it
prints the messages read again on the new cluster between that flip and the next
(``reread``). The messages carry no ``hs-id`` (their producer is not the SDK's), so the
consumer cannot filter them: each one read again is handed out again, and counted. Next to
it, what
the subscription had handed out and not yet acknowledged when the flip was written
(``unacked``), and the messages never received (``lost``, which must be 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

import pulsar
from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster

ROUTE = "payments"
_TYPES = {"Shared": pulsar.ConsumerType.Shared, "Key_Shared": pulsar.ConsumerType.KeyShared,
          "Failover": pulsar.ConsumerType.Failover}  # fmt: skip
_MODES = {"replicated": True, "own_cursor": False}
_WARM_S = 4.0  # before the first flip: every subscription exists and reads
_TAIL_S = 8.0  # after the last flip, for the last re-read to show


class _Reader:
    """One subscription's consumer, read on its own thread: what it received and acknowledged."""

    def __init__(self, client: Client, topic: str, kind: str, mode: str) -> None:
        self.name = f"{kind}/{mode}"
        self.consumer = client.subscribe(topic, f"s-{kind}-{mode}", consumer_type=_TYPES[kind],
                                         replicate_subscription_state_enabled=_MODES[mode])  # fmt: skip
        self.received: dict[int, int] = {}
        self.lock = threading.Lock()
        self.unacked = 0  # handed out, acknowledgement not yet called
        self.again = 0  # received before
        self.marks: list[tuple[int, int]] = []  # per flip: (read again so far, unacked) when it was written
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"reader-{self.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            with self.lock:
                seq = int(msg.data())
                if seq in self.received:
                    self.again += 1
                self.received[seq] = self.received.get(seq, 0) + 1
                self.unacked += 1
            self.consumer.acknowledge(msg)
            with self.lock:
                self.unacked -= 1

    def mark(self) -> None:
        with self.lock:
            self.marks.append((self.again + self.consumer.filtered, self.unacked))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        self.consumer.close()


def measure(rc: RefCluster, flips: int = 6, interval: float = 6.0, rate: int = 200) -> dict[str, Any]:
    """The run on ``rc`` (see the module doc)."""
    center = ConfigCenter.open(replace(rc.settings("sre"), namespace=rc.namespace))
    quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/null")
    client = Client(ROUTE, etcd=f"127.0.0.1:{rc.ports.etcd}", namespace=rc.namespace, logger=quiet)
    raw = pulsar.Client(rc.cluster_spec("pulsar-a").url, logger=quiet)
    topic = f"persistent://public/default/reread-{uuid.uuid4().hex[:8]}"
    readers: list[_Reader] = []
    try:
        producer = raw.create_producer(topic)
        readers = [_Reader(client, topic, kind, mode) for kind in _TYPES for mode in _MODES]
        total = int(rate * (_WARM_S + flips * interval + _TAIL_S))
        began = time.monotonic()
        next_flip = began + _WARM_S
        done_flips = 0
        for seq in range(total):
            now = time.monotonic()
            if done_flips < flips and now >= next_flip:
                for reader in readers:
                    reader.mark()
                route = center.route(ROUTE)
                center.switch(ROUTE, next(c for c in route.clusters if c != route.active), reason="re-read bench")
                done_flips += 1
                next_flip += interval
            time.sleep(max(began + seq / rate - time.monotonic(), 0))  # pacing the producer
            producer.send_async(str(seq).encode(), None, partition_key=f"k{seq % 64}")
        producer.flush()
        for reader in readers:
            reader.mark()  # the end of the last flip's interval

        def all_received() -> bool:
            return all(len(r.received) >= total for r in readers)

        deadline = time.monotonic() + 60
        while not all_received() and time.monotonic() < deadline:
            time.sleep(0.2)  # polling for the readers to catch up, bounded
        time.sleep(2.0)  # a late duplicate still counts
    finally:
        for reader in readers:
            reader.stop()
        client.close()
        raw.close()
        center.close()
    out: dict[str, Any] = {"brokers": rc.brokers, "flips": flips, "interval_s": interval, "rate": rate,
                           "produced": total, "subscriptions": {}}  # fmt: skip
    for reader in readers:
        reread = [b[0] - a[0] for a, b in zip(reader.marks, reader.marks[1:], strict=False)]
        out["subscriptions"][reader.name] = {
            "reread": reread,
            "reread_median": statistics.median(reread) if reread else None,
            "unacked_at_flip": [m[1] for m in reader.marks[:-1]],
            "reread_total": reader.again + reader.consumer.filtered,
            "lost": sum(1 for seq in range(total) if seq not in reader.received),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flips", type=int, default=6)
    parser.add_argument("--interval", type=float, default=6.0, help="seconds between flips")
    parser.add_argument("--rate", type=int, default=200, help="messages/s offered by the producer")
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        result = measure(rc, args.flips, args.interval, args.rate)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['flips']} flips every {result['interval_s']} s at {result['rate']}/s on {result['brokers']}:")
        for name, sub in result["subscriptions"].items():
            print(f"  {name:22} re-read per flip {sub['reread']} (median {sub['reread_median']}), unacked at "
                  f"the flip {sub['unacked_at_flip']}; in all {sub['reread_total']}; lost {sub['lost']}")  # fmt: skip
    lost = sum(sub["lost"] for sub in result["subscriptions"].values())
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
