"""Every figure of docs/performance.md on one reference cluster, in one run, as one JSON document.

    python bench/all.py [--brokers lite|apache] [--refcluster-dir DIR] [--only NAME ...] [--out FILE]

Starts its own reference cluster on free loopback ports (or uses one that is up) and runs, one
after the other on it, each benchmark of this folder at the size that fits the whole in about
ten minutes on a 2-core machine: switch latency (Kafka, Pulsar), throughput with CPU per record
(Kafka, Pulsar; the raw client in the same rounds), synchronous commits (4 and 64 partitions;
the raw client in the same loop), flapping (20 flips in 10 s under Kafka traffic) and, on the
apache cluster, Pulsar's re-read per flip (with and without replicated subscription state). Each
figure comes with its baseline from the same run. Progress goes to stderr; the document, to
stdout (and ``--out``). A benchmark that fails is reported as ``{"error": ...}`` and the
others still run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import commits
import flapping
import pulsar_reread
import switch_latency
import throughput
from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.logs import configure
from hotstandby.refcluster import RefCluster

#: name -> what it measures on a cluster, at the size the whole run is budgeted for.
BENCHMARKS: dict[str, Callable[[RefCluster], dict[str, Any]]] = {
    "switch_latency_kafka": lambda rc: switch_latency.measure(rc, "kafka", switches=10),
    "switch_latency_pulsar": lambda rc: switch_latency.measure(rc, "pulsar", switches=10),
    # Tansu acknowledges about 3000 records/s: fewer records there than on Apache Kafka.
    "throughput_kafka": lambda rc: throughput.measure(
        rc, "kafka", records=3_000 if rc.brokers == "lite" else 30_000, rounds=3
    ),
    "throughput_pulsar": lambda rc: throughput.measure(rc, "pulsar", records=5_000, rounds=3),
    "commits": lambda rc: {"results": [commits.measure(rc, p, 40) for p in (4, 64)]},
    "flapping_kafka": flapping.measure,
    "flapping_kafka_skew_500ms": lambda rc: flapping.measure(rc, skew_ms=500),
    # Six subscriptions and a producer on one topic: pulsar-lite stopped answering in the one
    # run tried there, so only on the apache cluster.
    "pulsar_reread": lambda rc: (
        pulsar_reread.measure(rc) if rc.brokers == "apache" else {"skipped": "apache cluster only"}
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run these only")
    parser.add_argument("--out", help="also write the JSON document to this file")
    add_cluster_options(parser)
    args = parser.parse_args()
    configure("warning")
    began = time.monotonic()
    results: dict[str, Any] = {}
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        brokers = rc.brokers
        for name in args.only or list(BENCHMARKS):
            print(f"[{time.monotonic() - began:5.0f} s] {name} ...", file=sys.stderr, flush=True)
            started = time.monotonic()
            try:
                results[name] = BENCHMARKS[name](rc)
            except Exception as exc:  # one failed benchmark must not hide the others' figures
                traceback.print_exc(file=sys.stderr)
                results[name] = {"error": repr(exc)}
            results[name]["bench_seconds"] = round(time.monotonic() - started, 1)
    document = {"brokers": brokers, "seconds": round(time.monotonic() - began, 1), "results": results}
    text = json.dumps(document, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
