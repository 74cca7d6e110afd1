"""``hotstandby drill``: run the failover drill on the reference cluster and report.

Uses the reference cluster running in ``--dir`` (``hotstandby refcluster up``) or starts one
there and stops it afterwards. Without ``--system`` it drills Kafka, then Pulsar, then a short
Spark part (at most :data:`DEFAULT_SPARK_MESSAGES` records; skipped, with a note, where pyspark
is not installed). ``--route`` picks the route the Spark drill reads (``orders``, Kafka, by
default; ``payments``, Pulsar) and is refused, exit status 2, without ``--system spark``: the
Kafka and Pulsar drills have their own routes. ``--secure`` drills on a reference cluster
whose etcd has TLS and authentication (``refcluster up --secure``): the clients connect as the
``app`` user, the flips are made as ``sre``, the replicators run as ``replicator``. Exit status
0 when nothing was lost or duplicated, 1 otherwise, 2 bad usage.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from typing import Any

from hotstandby.adapters.kafka.client_logs import LIBRDKAFKA_LOGGER
from hotstandby.cli.output import emit
from hotstandby.cli.progress import ProgressBar
from hotstandby.drill import DrillOptions, DrillProgress
from hotstandby.drill.html_report import write_report
from hotstandby.drill.systems import DRILLS, ROUTES, drill_system
from hotstandby.errors import MissingDependencyError
from hotstandby.refcluster import RefCluster

__all__ = ["add_commands"]

SYSTEMS = tuple(DRILLS)
# Without --system the Spark part is short: its query takes 20-60 s to start, once more after
# the driver kill, and reads in micro-batches.
DEFAULT_SPARK_MESSAGES = 5000


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "drill", parents=[common], help="rehearse failover on the reference cluster and report losses/duplicates"
    )
    p.add_argument("--system", choices=SYSTEMS,
                   help="which clients to drill (default: kafka, then pulsar, then a short spark part: at most "
                        f"{DEFAULT_SPARK_MESSAGES} records, skipped where pyspark is not installed)")  # fmt: skip
    p.add_argument("--route", choices=tuple(ROUTES["spark"]),
                   help="with --system spark only (refused otherwise, exit status 2): the route the query reads, "
                        "orders (Kafka, the default) or payments (Pulsar), fed by that system's drill's producer")  # fmt: skip
    p.add_argument("--messages", type=int, default=20_000, metavar="N", help="records to produce (default 20000)")
    p.add_argument("--spark-master", metavar="URL",
                   help="with --system spark: run the query on this Spark master (spark://HOST:PORT) instead of "
                        "local[2]; its executors must reach etcd and the brokers")  # fmt: skip
    p.add_argument("--pipeline", action="store_true",
                   help="with --system spark: the query writes what it reads, transformed, to a second topic "
                        "through the hotstandby sink, and an SDK consumer counts what arrives there")  # fmt: skip
    p.add_argument("--switches", type=int, default=2, metavar="K", help="route flips, A->B->A... (default 2)")
    p.add_argument("--kill-primary", action="store_true",
                   help="SIGKILL the active broker before the first flip (restarted before any flip back: "
                        "empty on the lite cluster, with its data on the apache one)")  # fmt: skip
    p.add_argument("--consumers", type=int, default=2, metavar="M",
                   help="consumers in the group (default 2; spark: always one streaming query, whose driver is "
                        "SIGKILLed before the last flip and restarted from its checkpoint after it)")  # fmt: skip
    p.add_argument(
        "--rate",
        type=int,
        help="records/s offered by the producer (default: spread over ~6 s between flips, spark ~10 s, at most "
        "2000/s; 0: unpaced)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds (default 900)")
    p.add_argument("--dir", help="reference cluster directory (default ~/.hotstandby/refcluster)")
    p.add_argument("--keep", action="store_true", help="leave a reference cluster the drill started running")
    p.add_argument("--report", metavar="DIR",
                   help="also write drill.html into DIR: records per second per cluster, flips, kills and restarts "
                        "over time, and the counts (one self-contained page)")  # fmt: skip
    p.add_argument("--brokers", choices=("lite", "apache"),
                   help="the reference cluster to start when none is up: lite (look-alike brokers, the default) or "
                        "apache (Apache Kafka with MirrorMaker 2, Apache Pulsar with geo-replication); one that is "
                        "up must be of this flavour")  # fmt: skip
    p.add_argument("--secure", action="store_true",
                   help="on a reference cluster whose etcd has TLS and authentication (started so if it is not "
                        "running): clients connect as the app user, flips are made as the sre user")  # fmt: skip
    p.set_defaults(func=drill)


def drill(args: argparse.Namespace) -> int:
    if args.messages < 1 or args.switches < 0 or args.consumers < 1:
        print("hotstandby: error: --messages and --consumers must be >= 1, --switches >= 0", file=sys.stderr)
        return 2
    for given, flag in ((args.spark_master is not None, "--spark-master"), (args.pipeline, "--pipeline")):
        if given and args.system != "spark":
            print(f"hotstandby: error: {flag} applies to --system spark only", file=sys.stderr)
            return 2
    if args.route is not None and args.system not in ROUTES:
        print(f"hotstandby: error: --route applies to --system {' or '.join(ROUTES)} only: the kafka and pulsar "
              "drills have their own routes (orders, payments)", file=sys.stderr)  # fmt: skip
        return 2
    rc = RefCluster(args.dir, secure=args.secure, brokers=args.brokers or "lite")
    quiet = args.json
    started_here = False
    if args.secure and rc.is_up() and not rc.secure:
        print(f"hotstandby: error: the reference cluster in {rc.dir} is up without --secure; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 2
    if args.brokers and rc.is_up() and rc.brokers != args.brokers:
        print(f"hotstandby: error: the reference cluster in {rc.dir} is up with --brokers {rc.brokers}; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 2
    if not rc.is_up():
        if not quiet:
            print(f"starting the {rc.brokers} reference cluster in {rc.dir} ...", file=sys.stderr)
        started_here = rc.up(notes=None if quiet else lambda note: print(f"  {note}", file=sys.stderr))
    bar = ProgressBar()
    systems = [args.system] if args.system else list(SYSTEMS)
    current = [systems[0]]

    def progress(p: DrillProgress) -> None:
        if not quiet:
            bar.update(p.consumed, p.total, f"{current[0]}: produced {p.produced}  consumed {p.consumed}  "
                                            f"switches {p.switches_done}/{args.switches}  {p.phase}")  # fmt: skip

    options = DrillOptions(
        messages=args.messages, switches=args.switches, kill_primary=args.kill_primary,
        consumers=args.consumers, timeout_s=args.timeout, rate=args.rate, route=args.route,
        spark_master=args.spark_master, spark_pipeline=args.pipeline,
    )  # fmt: skip
    reports = []
    try:
        for system in systems:
            current[0] = system
            short = system == "spark" and not args.system  # the default run's Spark part
            part = replace(options, messages=min(args.messages, DEFAULT_SPARK_MESSAGES)) if short else options
            try:
                reports.append(drill_system(system, rc, part, progress))
            except MissingDependencyError as exc:
                if not short:
                    raise
                print(f"hotstandby: skipping the spark drill: {exc}", file=sys.stderr)
            bar.close()
    finally:
        bar.close()
        if started_here and not args.keep:
            # Every drill client is closed; the SDK's shared admin clients live as long as the
            # process, and librdkafka would report the cluster going away as errors.
            LIBRDKAFKA_LOGGER.setLevel(logging.CRITICAL)
            rc.down()
    ok = all(r.ok for r in reports)
    if args.report and reports:
        page = write_report(reports, args.report)
        if not quiet:
            print(f"report: {page}", file=sys.stderr)
    if len(reports) == 1:
        emit(args.json, reports[0].to_dict(), reports[0].human())
    else:
        emit(args.json, {"ok": ok, "reports": [r.to_dict() for r in reports]}, "\n".join(r.human() for r in reports))
    return 0 if ok else 1
