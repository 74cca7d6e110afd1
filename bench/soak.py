"""An hour of flips: steady traffic through the SDK while routes flip and primaries die.

    python bench/soak.py [--minutes 60] [--flip-every 120] [--kill-every 600] [--rate 40]
                         [--spark-rate 10] [--sample-every 10] [--no-spark] [--out DIR]
                         [--brokers lite|apache] [--refcluster-dir DIR] [--json]

Starts its own reference cluster on free loopback ports (or uses one that is up). In one
config center namespace, three of the drill's workloads run side by side, each with its own
topic and group: Kafka (an SDK producer and two consumers on route ``orders``), Pulsar (an SDK
producer and two shared consumers on ``payments``) and Spark (a streaming query of the
``hotstandby`` source, run as a process of its own, reading a topic of ``orders`` fed by an SDK
producer). Every ``--flip-every`` seconds both routes flip; every ``--kill-every`` seconds the
flip of one route (Kafka and Pulsar in turn) comes right after its active broker was SIGKILLed,
which is started again once the clients moved.

Every ``--sample-every`` seconds it records the soak process's RSS, threads and file
descriptors (it hosts the Kafka and Pulsar clients), the same summed over the Spark job's
processes, the keys and bytes under the namespace and its ledgers, etcd's database size, and
the records consumed. It writes ``samples.json``, ``events.json``, ``summary.json`` and
``soak.png`` (every series over time, flips and kills marked) into ``--out``, and prints, per
workload, what was lost and duplicated, and per series its change from after the warm-up
(the first quarter) to the end (medians of the first and last 15 % of what follows it).
The goal: lost 0, duplicated 0, every series within ±10 %.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench_cluster import add_cluster_options, reference_cluster
from soak_chart import draw
from soak_sample import Usage, keyspace, process_usage, session_usage

from hotstandby.configcenter import ConfigCenter, polling
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.pulsar import PulsarWorkload
from hotstandby.drill.runner import ClientThreads, DrillContext, DrillOptions, Workload, new_run_id
from hotstandby.drill.spark import SparkWorkload
from hotstandby.failover.presence import list_clients
from hotstandby.logs import configure_from_env
from hotstandby.refcluster import RefCluster

SYSTEM_OF_ROUTE = {"orders": "kafka", "payments": "pulsar"}
MOVE_TIMEOUT_S = 120.0  # for the clients to move after a kill, before the broker comes back
SETTLE_S = 5.0


@dataclass
class Part:
    """One workload and its clients."""

    name: str
    workload: Workload
    ctx: DrillContext
    threads: ClientThreads
    flips: list[dict[str, Any]] = field(default_factory=list)


def start_part(name: str, workload: Workload, rc: RefCluster, namespace: str, rate: float, seconds: float) -> Part:
    options = DrillOptions(messages=int(rate * seconds), switches=0, consumers=2, rate=int(rate),
                           timeout_s=seconds + 900)  # fmt: skip
    ctx = DrillContext(options, workload.run, namespace, rc.client_config("app"), time.monotonic() + options.timeout_s)
    workload.prepare(rc, ctx)
    threads = ClientThreads(ctx)
    for i in range(options.consumers):
        threads.start(f"{name}-consumer-{i}", lambda i=i: workload.consume(ctx, i))

    def produce() -> None:
        try:
            workload.produce(ctx)
        finally:
            ctx.producing_done.set()

    threads.start(f"{name}-producer", produce)
    return Part(name, workload, ctx, threads)


def moved(center: ConfigCenter, route: str, to: str) -> bool:
    return all(d.get("cluster") == to and d.get("state") == "active" for d in list_clients(center, route))


def flip(rc: RefCluster, center: ConfigCenter, route: str, parts: list[Part], *, kill: bool) -> dict[str, Any]:
    """Flip ``route`` (after a SIGKILL of its active broker, with ``kill``; that broker is
    started again once the clients moved, its topics provisioned again)."""
    current = center.route(route)
    target = next(c for c in current.clusters if c != current.active)
    if kill:
        rc.kill(current.active)
    center.switch(route, target, reason="hotstandby soak")
    marks = [(part, part.ctx.tally.flip(current.active, target, killed=kill)) for part in parts]
    event = {"route": route, "from": current.active, "to": target, "kind": "kill" if kill else "flip"}
    if kill:
        polling.wait_until(lambda: moved(center, route, target), MOVE_TIMEOUT_S, first=0.2, most=1.0)
        for part in parts:
            part.ctx.restarting.set()  # what is due meanwhile waits, as in the drill
        try:
            event["restart_s"] = round(rc.restart(current.active), 2)
            for part in parts:
                part.workload.restarted(rc, current.active)
        finally:
            for part in parts:
                part.ctx.restarting.clear()
    for part, mark in marks:
        part.flips.append({"mark": mark, **event})
    return event


def sample(t0: float, center: ConfigCenter, namespace: str, parts: list[Part]) -> dict[str, Any]:
    own = process_usage(os.getpid())
    spark = next((p.workload for p in parts if isinstance(p.workload, SparkWorkload)), None)
    pid = spark.job_pid if spark is not None else None
    job = session_usage(pid) if pid is not None else Usage.none()
    row: dict[str, Any] = {"t": round((time.monotonic() - t0) / 60, 3), "rss_mb": round(own.rss_mb, 1),
                           "threads": own.threads, "fds": own.fds}  # fmt: skip
    if spark is not None:
        row.update(spark_rss_mb=round(job.rss_mb, 1), spark_threads=job.threads, spark_fds=job.fds)
    try:
        row.update(keyspace(center, namespace))
    except Exception as exc:  # a sample must not end the soak: etcd may be slow for a moment
        row["keyspace_error"] = repr(exc)
    for part in parts:
        row[f"{part.name}_produced"], row[f"{part.name}_consumed"] = part.ctx.tally.counts()
    return row


def growth(samples: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The change of ``key`` from just after the warm-up (the first quarter) to the end."""
    after = [s[key] for s in samples[len(samples) // 4 :] if key in s]
    if len(after) < 7:
        return None
    span = max(len(after) * 15 // 100, 1)
    base, final = statistics.median(after[:span]), statistics.median(after[-span:])
    pct = None if base == 0 else round((final - base) / base * 100, 1)
    return {"after_warmup": base, "end": final, "change_pct": pct, "flat": pct is not None and abs(pct) <= 10}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--flip-every", type=float, default=120.0, help="seconds between flips (default 120)")
    parser.add_argument("--kill-every", type=float, default=600.0, help="seconds between kills (default 600; 0: none)")
    parser.add_argument("--rate", type=float, default=40.0, help="records/s of the Kafka and the Pulsar producer")
    parser.add_argument("--spark-rate", type=float, default=10.0, help="records/s the Spark query's feed produces")
    parser.add_argument("--sample-every", type=float, default=10.0)
    parser.add_argument("--no-spark", action="store_true", help="without the Spark query")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default ./soak-<run>)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_cluster_options(parser)
    args = parser.parse_args()
    seconds = args.minutes * 60
    run = new_run_id()
    out: Path = args.out or Path(f"soak-{run}")
    out.mkdir(parents=True, exist_ok=True)
    # A native crash (librdkafka aborts on some internal assertions) leaves every thread's
    # Python stack here: which call of which client was in flight.
    faults = (out / "faults.log").open("w")
    faulthandler.enable(file=faults, all_threads=True)
    configure_from_env()  # HOTSTANDBY_LOG_LEVEL=info: what the clients did, next to the crash
    kill_each = round(args.kill_every / args.flip_every) if args.kill_every else 0
    with reference_cluster(args.brokers, args.refcluster_dir, args.settings) as rc:
        namespace = f"{rc.namespace.rstrip('/')}-soak/{run}"
        rc.register(namespace)
        center = ConfigCenter.open(replace(rc.settings(), namespace=namespace))
        parts = [start_part("kafka", KafkaWorkload(f"{run}k"), rc, namespace, args.rate, seconds),
                 start_part("pulsar", PulsarWorkload(f"{run}p"), rc, namespace, args.rate, seconds)]  # fmt: skip
        if not args.no_spark:
            parts.append(start_part("spark", SparkWorkload(f"{run}s"), rc, namespace, args.spark_rate, seconds))
        samples: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        t0 = time.monotonic()
        next_sample, next_flip, flips = t0, t0 + args.flip_every, 0
        try:
            while time.monotonic() < t0 + seconds and not any(p.threads.errors for p in parts):
                now = time.monotonic()
                if now >= next_sample:
                    samples.append(sample(t0, center, namespace, parts))
                    next_sample += args.sample_every
                if now >= next_flip:
                    flips += 1
                    killing = kill_each and not flips % kill_each
                    killed = ("kafka", "pulsar")[(flips // kill_each - 1) % 2] if killing else None  # in turn
                    for route, system in SYSTEM_OF_ROUTE.items():
                        on_route = [p for p in parts if p.workload.route == route]
                        event = flip(rc, center, route, on_route, kill=system == killed)
                        events.append({"t": round((now - t0) / 60, 3), **event})
                        print(f"[{events[-1]['t']:6.2f} min] {event['kind']} {route}: {event['from']} -> {event['to']}",
                              file=sys.stderr)  # fmt: skip
                    next_flip += args.flip_every
                time.sleep(max(min(next_sample, next_flip) - time.monotonic(), 0.05))  # the schedule's next step
            for part in parts:  # what was produced last is consumed too
                polling.wait_until(lambda p=part: p.ctx.producing_done.is_set() and not p.ctx.tally.lost(), 300,
                                   first=0.5, most=1.0)  # fmt: skip
            samples.append(sample(t0, center, namespace, parts))
            time.sleep(SETTLE_S)  # copies that come late must be filtered too
        finally:
            for part in parts:
                part.ctx.stop.set()
            for part in parts:
                part.threads.join(60)
            center.close()
    summary = summarize(parts, samples, events, args)
    (out / "samples.json").write_text(json.dumps(samples, indent=1))
    (out / "events.json").write_text(json.dumps(events, indent=1))
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    draw(samples, events, out / "soak.png", f"hotstandby soak: {args.minutes:g} min, {rc.brokers} reference cluster")
    print(json.dumps(summary, indent=2) if args.json else render(summary, out))
    clean = all(w["lost"] == 0 and w["duplicated"] == 0 and not w["errors"] for w in summary["workloads"].values())
    return 0 if clean else 1


def summarize(parts: list[Part], samples: list[dict[str, Any]], events: list[dict[str, Any]],
              args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    workloads = {}
    for part in parts:
        tally, ctx = part.ctx.tally, part.ctx
        latencies = sorted(m.latency_ms for m in tally.switches if m.latency_ms is not None)
        workloads[part.name] = {
            "produced": len(tally.produced), "consumed": len(tally.consumed & tally.produced),
            "lost": len(tally.lost()), "duplicated": tally.duplicated, "filtered": sum(ctx.filtered.values()),
            "resent": ctx.resent, "flips": len(tally.switches),
            "flip_ms_p50": latencies[len(latencies) // 2] if latencies else None,
            "flip_ms_max": latencies[-1] if latencies else None,
            "errors": [repr(e) for e in part.threads.errors],
        }  # fmt: skip
    keys = sorted({k for s in samples for k, v in s.items() if isinstance(v, (int, float)) and k != "t"
                   and not k.endswith(("_produced", "_consumed"))})  # fmt: skip
    return {
        "minutes": args.minutes, "flip_every_s": args.flip_every, "kill_every_s": args.kill_every,
        "flips": sum(e["kind"] == "flip" for e in events), "kills": sum(e["kind"] == "kill" for e in events),
        "workloads": workloads, "growth": {k: growth(samples, k) for k in keys},
    }  # fmt: skip


def render(summary: dict[str, Any], out: Path) -> str:
    lines = [f"soak: {summary['minutes']:g} min, {summary['flips']} flips and {summary['kills']} kills "
             f"(route flips; a kill is a flip after a SIGKILL)"]  # fmt: skip
    for name, w in summary["workloads"].items():
        lines.append(f"  {name:7} produced {w['produced']:>8}  lost {w['lost']}  duplicated {w['duplicated']}  "
                     f"filtered {w['filtered']}  re-sent {w['resent']}  flip p50 {w['flip_ms_p50']} ms  "
                     f"max {w['flip_ms_max']} ms{'  ERRORS ' + '; '.join(w['errors']) if w['errors'] else ''}")  # fmt: skip
    lines.append("  series after the warm-up -> end:")
    for key, g in summary["growth"].items():
        if g is not None:
            lines.append(f"    {key:14} {g['after_warmup']:>10} -> {g['end']:>10}  {g['change_pct']!s:>6} %"
                         f"{'' if g['flat'] else '  NOT FLAT'}")  # fmt: skip
    lines.append(f"written to {out}/ (soak.png, samples.json, events.json, summary.json)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
