"""The drills and the anchors' flips (the SDK rows of ``bench/versus.py``) on each combination of
Apache Kafka and Apache Pulsar versions: one fresh apache reference cluster per combination, on
free loopback ports, stopped afterwards.

    python bench/matrix.py [--kafka 4.3.1,3.9.1] [--pulsar 4.0.7,3.0.7] [--settings test|production]
                           [--messages N] [--json]

Each row: the Kafka drill and the Pulsar drill (2 flips; records lost / duplicated), then the
versus scenario with the SDK's consumers (SIGKILL + flip, failback, planned flip; lost /
duplicated) on each system. The jars of a version are resolved from Maven Central on first use
(``refcluster/jars.py``). The versions are paired as given, every Kafka with every Pulsar.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from typing import Any, cast

from bench_cluster import terminated_as_exit

from hotstandby.drill import DrillOptions
from hotstandby.drill import kafka as kafka_drill
from hotstandby.drill import pulsar as pulsar_drill
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import new_run_id, run_drill
from hotstandby.drill.versus import KafkaVersus, PulsarVersus
from hotstandby.logs import configure
from hotstandby.refcluster import Ports, RefCluster
from hotstandby.refcluster.jars import JarSet
from hotstandby.refcluster.system import Tuning


def _cell(report: DrillReport) -> dict[str, Any]:
    return {
        "lost": report.lost,
        "duplicated": report.duplicated,
        "produced": report.produced,
        "lost_sample": report.lost_sample[:5],
        # per flip, so that a duplicate is told by the flip that made it
        "duplicated_per_flip": [s.duplicated for s in report.switches],
    }


def _combination(kafka: str, pulsar: str, tuning: Tuning, messages: int) -> dict[str, Any]:
    drill = DrillOptions(messages=messages, switches=2)
    versus = DrillOptions(messages=messages, switches=3, kill_primary=True, consumers=2, lockstep=True, rate=200,
                          timeout_s=600, settle_s=10)  # fmt: skip
    row: dict[str, Any] = {"kafka": kafka, "pulsar": pulsar, "settings": tuning}
    with (
        terminated_as_exit(),
        tempfile.TemporaryDirectory(prefix="hs-matrix-") as tmp,
        RefCluster(
            tmp, Ports.free(), brokers="apache", tuning=tuning, versions={"kafka": kafka, "pulsar": pulsar}
        ) as rc,
    ):
        for name, run in (("kafka drill", lambda: kafka_drill.run(rc, drill)),
                          ("pulsar drill", lambda: pulsar_drill.run(rc, drill)),
                          ("kafka versus", lambda: run_drill(rc, versus, KafkaVersus(new_run_id(), raw=False))),
                          ("pulsar versus", lambda: run_drill(rc, versus, PulsarVersus(new_run_id(), raw=False)))):  # fmt: skip
            print(f"Kafka {kafka}, Pulsar {pulsar}: {name} ...", file=sys.stderr, flush=True)
            row[name] = _cell(run())
    return row


def _lost_dup(cell: dict[str, Any]) -> str:
    """``lost / duplicated``, and the duplicates per flip when there are any."""
    text = f"{cell['lost']} / {cell['duplicated']}"
    if cell["duplicated"]:
        text += " (per flip " + " / ".join(str(n) for n in cell["duplicated_per_flip"]) + ")"
    return text


def _table(rows: list[dict[str, Any]]) -> str:
    parts = ("kafka drill", "pulsar drill", "kafka versus", "pulsar versus")
    lines = ["| Kafka | Pulsar | " + " | ".join(f"{p} (lost / dup)" for p in parts) + " |",
             "|---|---|" + "--:|" * len(parts)]  # fmt: skip
    for row in rows:
        cells = " | ".join(_lost_dup(row[p]) for p in parts)
        lines.append(f"| {row['kafka']} | {row['pulsar']} | {cells} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kafka", default=f"{JarSet('kafka').version},3.9.1", help="Kafka versions, comma-separated")
    parser.add_argument("--pulsar", default=f"{JarSet('pulsar').version},3.0.7", help="Pulsar versions")
    parser.add_argument("--settings", choices=("test", "production"), default="test")
    parser.add_argument("--messages", type=int, default=6000, help="records per drill and per versus run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure("critical")  # a killed broker makes every client log its connection attempts
    rows = [_combination(k, p, cast(Tuning, args.settings), args.messages)
            for k, p in itertools.product(args.kafka.split(","), args.pulsar.split(","))]  # fmt: skip
    print(json.dumps(rows, indent=2) if args.json else _table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
