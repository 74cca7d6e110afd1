"""Switch latency: route flip in etcd -> first record consumed on the new cluster.

    python bench/switch_latency.py --system kafka|pulsar [--switches K] [--brokers lite|apache]
                                   [--settings test|production] [--group-protocol classic|consumer]
                                   [--refcluster-dir DIR] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up) and runs the drill's workload (an SDK
producer at a steady rate, two SDK consumers in one group) through K planned flips
A -> B -> A ..., measuring each flip from the etcd write to the first record a consumer
receives on the new cluster: the drain of the old cluster, the group join on the new one
(about half the session timeout on the reference broker; Apache Kafka's
``group.initial.rebalance.delay.ms`` with the classic protocol), the translated start positions.
``--group-protocol consumer`` runs the consumers with KIP-848's protocol (and the ``range``
assignor, which keeps a topic's and its copies' partitions together). The same run checks
that nothing was lost or duplicated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.drill import DrillOptions
from hotstandby.drill.systems import drill_system
from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster


def measure(
    rc: RefCluster, system: str, switches: int = 12, rate: int = 100, group_protocol: str = "classic"
) -> dict[str, Any]:
    """The drill's workload through ``switches`` planned flips on ``rc``: each flip's latency."""
    # About 5 s of records between flips: enough for the consumers to settle on each cluster.
    messages = rate * 5 * (switches + 1)
    consumer = {"group.protocol": "consumer", "group.remote.assignor": "range"} if group_protocol == "consumer" else {}
    options = DrillOptions(messages=messages, switches=switches, consumers=2, rate=rate, timeout_s=110,
                           kafka_consumer=consumer)  # fmt: skip
    report = drill_system(system, rc, options)
    latencies = [s.latency_ms for s in report.switches if s.latency_ms is not None]
    if len(latencies) < 2:
        raise RuntimeError(f"only {len(latencies)} switches were measured")
    q = statistics.quantiles(sorted(latencies), n=100, method="inclusive")
    return {
        "system": system,
        "brokers": rc.brokers,
        "settings": rc.tuning,
        "group_protocol": group_protocol,
        "switches": len(report.switches),
        "measured": len(latencies),
        "p50_ms": round(q[49], 1),
        "p99_ms": round(q[98], 1),
        "max_ms": round(max(latencies), 1),
        "latencies_ms": latencies,
        "lost": report.lost,
        "duplicated": report.duplicated,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("kafka", "pulsar"), default="kafka")
    parser.add_argument("--switches", type=int, default=12)
    parser.add_argument("--rate", type=int, default=100, help="records/s offered by the producer")
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--json", action="store_true")
    add_cluster_options(parser)
    args = parser.parse_args()
    if args.switches < 10:
        parser.error("--switches must be at least 10 for a p99")
    configure("warning")
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        result = measure(rc, args.system, args.switches, args.rate, args.group_protocol)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['measured']} switches: p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms "
              f"(lost {result['lost']}, duplicated {result['duplicated']})")  # fmt: skip
    return 0 if result["lost"] == 0 and result["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
