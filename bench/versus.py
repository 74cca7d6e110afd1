"""The anchors side by side: raw clients resuming on the standby the way their users do, and
the SDK, through the same flips on the same reference cluster (the real systems by default).

    python bench/versus.py [--brokers apache|lite] [--refcluster-dir DIR] [--systems kafka,pulsar] [--clients all|sdk] [--json]

For each system, one run per row (``hotstandby/drill/versus.py`` says what each row's consumers do),
each with three flips while an SDK producer writes at a steady rate: the first after a SIGKILL
of the active broker (which is restarted with its data before the next flip), the second a
failback to that restarted cluster, the third a planned flip. Columns: records lost,
duplicated (delivered again after they were committed or acknowledged; per flip too), and the
time from each flip to the first record consumed on the new cluster. The raw rows are told of a
flip the moment it is written, where an application would be restarted: their times leave out
that restart.

Starts its own reference cluster on free loopback ports unless ``--refcluster-dir`` names one
that is up (which it leaves running).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster

from hotstandby.drill import DrillOptions
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import new_run_id, run_drill
from hotstandby.drill.versus import KafkaVersus, PulsarVersus
from hotstandby.logs import configure

FLIPS = ("kill", "failback", "planned")  # the order run_drill makes them in, with kill_primary
ROWS: dict[str, tuple[tuple[str, type[KafkaVersus] | type[PulsarVersus], bool], ...]] = {
    "kafka": (("raw confluent-kafka, MM2-synced offsets", KafkaVersus, True), ("hotstandby", KafkaVersus, False)),
    "pulsar": (("raw pulsar-client, replicated subscription", PulsarVersus, True), ("hotstandby", PulsarVersus, False)),
}


@dataclass(frozen=True)
class Row:
    system: str
    client: str
    produced: int
    lost: int
    duplicated: int
    redelivered: int
    flips: dict[str, dict[str, Any]]  # kill/failback/planned -> first_record_ms, duplicated

    @classmethod
    def of(cls, system: str, client: str, report: DrillReport) -> Row:
        flips = {name: {"first_record_ms": s.latency_ms, "duplicated": s.duplicated}
                 for name, s in zip(FLIPS, report.switches, strict=False)}  # fmt: skip
        return cls(system, client, report.produced, report.lost, report.duplicated, report.redelivered, flips)


def _table(rows: list[Row], settings: dict[str, Any]) -> str:
    def ms(flip: dict[str, Any] | None) -> str:
        if flip is None or flip["first_record_ms"] is None:
            return "—"
        return f"{flip['first_record_ms'] / 1000:.1f} s"

    head = "| system | consumer | produced | lost | duplicated (kill / failback / planned) | first record after kill / failback / planned |"
    lines = [head, "|---|---|--:|--:|--:|--:|"]
    for r in rows:
        per_flip = " / ".join(str(r.flips.get(f, {}).get("duplicated", "—")) for f in FLIPS)
        times = " / ".join(ms(r.flips.get(f)) for f in FLIPS)
        lines.append(f"| {r.system} | {r.client} | {r.produced} | {r.lost} | {r.duplicated} ({per_flip}) | {times} |")
    lines.append("")
    lines.append(", ".join(f"{k}: {v}" for k, v in settings.items()))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_options(parser, default="apache")
    parser.add_argument("--systems", default="kafka,pulsar")
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--rate", type=int, default=200, help="records/s offered by the producer")
    parser.add_argument("--clients", choices=("all", "sdk"), default="all",
                        help="sdk: the hotstandby rows only (the raw rows lose records and run to the timeout)")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true", help="the clients' warnings and errors on stderr")
    args = parser.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    if unknown := set(systems) - set(ROWS):
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    # A killed broker makes every client log its connection attempts: left out unless asked for.
    configure("warning" if args.verbose else "critical")
    logging.getLogger("bench").setLevel(logging.WARNING if args.verbose else logging.CRITICAL)  # the raw clients
    options = DrillOptions(messages=args.messages, switches=len(FLIPS), kill_primary=True, consumers=2, lockstep=True,
                           rate=args.rate, timeout_s=600, settle_s=10)  # fmt: skip
    rows: list[Row] = []
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        brokers, tuning = rc.brokers, rc.tuning
        for system in systems:
            for client, workload, raw in ROWS[system]:
                if raw and args.clients == "sdk":
                    continue
                print(f"{system}: {client} ...", file=sys.stderr, flush=True)
                report = run_drill(rc, options, workload(new_run_id(), raw=raw))
                rows.append(Row.of(system, client, report))
    settings = {"brokers": brokers, "settings": tuning, "records": args.messages, "rate": f"{args.rate}/s", "consumers": 2,
                "flips": "SIGKILL + flip, failback, planned"}  # fmt: skip
    if args.json:
        print(json.dumps({"settings": settings, "rows": [r.__dict__ for r in rows]}, indent=2))
    else:
        print(_table(rows, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
