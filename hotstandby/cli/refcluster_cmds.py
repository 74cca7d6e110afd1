"""``hotstandby refcluster up|down|status``."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from hotstandby.cli.output import emit, table
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterError
from hotstandby.failover.probe import probe_cluster
from hotstandby.refcluster import Ports, RefCluster
from hotstandby.refcluster.etcd_access import ROLE_USERS, ROOT
from hotstandby.refcluster.jars import JarSet
from hotstandby.refcluster.system import VERSIONED

__all__ = ["add_commands"]


def _cluster(args: argparse.Namespace) -> RefCluster:
    overrides = {}
    for item in args.port or []:
        name, sep, port = item.partition("=")
        if not sep or not port.isdigit():
            raise SystemExit(f"--port expects NAME=PORT, got {item!r}")
        overrides[name] = int(port)
    return RefCluster(args.dir, Ports().with_overrides(overrides), namespace=args.namespace or "/hotstandby",
                      secure=getattr(args, "secure", False), brokers=getattr(args, "brokers", None) or "lite",
                      etcd_members=getattr(args, "etcd_members", 1),
                      tuning=getattr(args, "settings", None) or "test", versions=_versions(args))  # fmt: skip


def _versions(args: argparse.Namespace) -> dict[str, str]:
    """``--kafka-version`` and ``--pulsar-version``, those given."""
    asked = {kind: getattr(args, f"{kind}_version", None) for kind in VERSIONED}
    return {kind: version for kind, version in asked.items() if version}


def _connection(rc: RefCluster) -> tuple[dict[str, Any], str]:
    """How to reach the cluster's etcd: JSON fields and a line for people."""
    access = rc.etcd_access()
    if not access.secure:
        return {"etcd": access.url}, f"etcd {access.url}"
    users = {user: str(access.password_file(user)) for user in (ROOT, *ROLE_USERS)}
    env = " ".join(f"{k}={v}" for k, v in {"HOTSTANDBY_ETCD": access.url, **access.environ("sre")}.items())
    human = (f"etcd {access.url} (TLS and authentication; CA {access.ca}; users {', '.join(users)}, passwords "
             f"in {access.password_file('USER')})\n  as an SRE: export {env}")  # fmt: skip
    return {"etcd": access.url, "secure": True, "ca": str(access.ca), "password_files": users}, human


def up(args: argparse.Namespace) -> int:
    rc = _cluster(args)
    started = time.monotonic()

    def progress(component: str, waited: float) -> None:
        if not args.json:
            print(f"  {component:<9} ready  ({waited:.2f} s)", file=sys.stderr)

    if not args.json:
        print(f"starting the reference cluster in {rc.dir}", file=sys.stderr)
    fresh = rc.up(progress=progress, timeout=args.timeout, notes=lambda note: print(f"  {note}", file=sys.stderr))
    elapsed = time.monotonic() - started
    if not fresh and args.secure and not rc.secure:
        print(f"hotstandby: the reference cluster in {rc.dir} is up without --secure; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 1
    if not fresh and args.brokers and rc.brokers != args.brokers:
        print(f"hotstandby: the reference cluster in {rc.dir} is up with --brokers {rc.brokers}; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 1
    if not fresh and args.settings and rc.tuning != args.settings:
        print(f"hotstandby: the reference cluster in {rc.dir} is up with --settings {rc.tuning}; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 1
    if not fresh and _versions(args) and rc.versions != _versions(args):
        print(f"hotstandby: the reference cluster in {rc.dir} is up with versions {rc.versions or 'as shipped'}; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 1
    if not fresh and args.etcd_members != rc.etcd_members:
        print(f"hotstandby: the reference cluster in {rc.dir} is up with --etcd-members {rc.etcd_members}; "
              "run `hotstandby refcluster down` first", file=sys.stderr)  # fmt: skip
        return 1
    connection, reach = _connection(rc)
    data = {"already_up": not fresh, "dir": str(rc.dir), "brokers": rc.brokers, **connection,
            "etcd_members": rc.etcd_members, "settings": rc.tuning, "versions": rc.versions,
            "seconds": round(elapsed, 2)}  # fmt: skip
    routes = " and ".join(f"{s.route} ({s.brokers[0]})" for s in rc.flavour.systems)
    human = (
        f"reference cluster is already up in {rc.dir}: {reach}"
        if not fresh
        else f"reference cluster up in {elapsed:.1f} s: routes {routes}\n{reach}"
    )
    emit(args.json, data, human)
    return 0


def down(args: argparse.Namespace) -> int:
    rc = _cluster(args)
    stopped = rc.down()
    emit(args.json, {"stopped": stopped}, f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def status(args: argparse.Namespace) -> int:
    rc = _cluster(args)
    state = rc.state()
    if state is None:
        emit(args.json, {"up": False, "dir": str(rc.dir), "components": []}, f"no reference cluster in {rc.dir}")
        return 3
    running = rc.running()
    components: list[dict[str, Any]] = []
    brokers = rc.flavour.brokers[1:]
    for name in rc.components:
        info = state["components"].get(name)
        if info is None:
            continue
        entry = {"name": name, "pid": info["pid"], "port": info["port"], "running": running[name], "log": info["log"]}
        if name in brokers and running[name]:
            result = probe_cluster(rc.cluster_spec(name), timeout=1.0)
            entry.update(
                answering=result.ok, latency_ms=None if result.latency_ms is None else round(result.latency_ms, 2)
            )
        components.append(entry)
    routes: list[dict[str, Any]] = []
    if running["etcd"]:
        try:
            with ConfigCenter.open(rc.settings()) as center:
                routes = [{"name": r.name, "active": r.active, "epoch": r.epoch} for r in center.routes().values()]
        except ConfigCenterError as exc:
            routes = [{"error": str(exc)}]
    flows = [{"name": name, **(report or {"state": "no report"})} for name, report in rc.replication().items()]
    data = {
        "up": all(running.values()),
        "dir": str(rc.dir),
        "brokers": rc.brokers,
        "settings": rc.tuning,
        "versions": rc.versions,
        "started_at": state["started_at"],
        "components": components,
        "routes": routes,
        "replication": flows,
    }
    human = table(
        ("COMPONENT", "PID", "PORT", "RUNNING", "ANSWERS", "LOG"),
        [
            (c["name"], c["pid"], c["port"], "yes" if c["running"] else "DEAD",
             {True: "yes", False: "NO", None: None}[c.get("answering")], c["log"])
            for c in components
        ],
    )  # fmt: skip
    if routes:
        human += "\n\n" + table(
            ("ROUTE", "ACTIVE", "EPOCH"), [(r.get("name"), r.get("active"), r.get("epoch")) for r in routes]
        )
    if flows:
        human += "\n\n" + _replication_table(flows)
    emit(args.json, data, human)
    return 0 if data["up"] else 1


def _replication_table(flows: list[dict[str, Any]]) -> str:
    now = time.time()

    def ago(event: dict[str, Any] | None) -> str | None:
        return None if not event else f"{now - event['at']:.1f}s ago"

    text = table(
        ("FLOW", "STATE", "TOPICS", "COPIED", "LAG", "LAG_S", "LAST_SYNC", "LAST_CHECKPOINT", "ERRORS"),
        [
            (f["name"], f.get("state"), len(f.get("topics", {})), f.get("records_copied"), f.get("lag_records"),
             f.get("lag_seconds"), ago(f.get("last_offset_sync")), ago(f.get("last_checkpoint")), len(f.get("errors", [])))
            for f in flows
        ],
    )  # fmt: skip
    overridden = next((f["intervals_overridden"] for f in flows if f.get("intervals_overridden")), None)
    if overridden:
        shown = ", ".join(
            f"{k} {v['value']:g}s (MM2 default {v['mm2_default']:g}s)" for k, v in sorted(overridden.items())
        )
        text += f"\nintervals shorter than MM2's defaults: {shown}"
    for f in flows:
        for err in f.get("errors", [])[-3:]:
            text += f"\n{f['name']} error {now - err['at']:.0f}s ago: {err['error']}"
    return text


def add_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    ref = sub.add_parser("refcluster", help="the bundled local reference cluster")
    rsub = ref.add_subparsers(dest="action", required=True)
    local = argparse.ArgumentParser(add_help=False)
    local.add_argument(
        "--dir", help="state, data and logs (default $HOTSTANDBY_REFCLUSTER_DIR or ~/.hotstandby/refcluster)"
    )
    local.add_argument(
        "--port",
        action="append",
        metavar="NAME=PORT",
        help="override a port: etcd, etcd_peer (etcd-2, etcd-2-peer, etcd-3, etcd-3-peer), kafka-a, kafka-b, pulsar-a, pulsar-b (apache also: "
        "kafka-a-controller, kafka-b-controller, pulsar-a-http, pulsar-b-http, pulsar-a-bookie, pulsar-b-bookie)",
    )
    p = rsub.add_parser("up", parents=[common, local], help="start etcd and the four brokers, register routes")
    p.add_argument("--brokers", choices=("lite", "apache"),
                   help="lite: look-alike brokers from wheels (default, seconds); apache: Apache Kafka with "
                        "MirrorMaker 2 and Apache Pulsar with geo-replication (jars from Maven Central)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for every process to answer (default 60 lite, 240 apache)")  # fmt: skip
    p.add_argument("--secure", action="store_true",
                   help="etcd with TLS and authentication: a generated CA, root and a user per role")  # fmt: skip
    p.add_argument("--etcd-members", type=int, choices=(1, 3), default=1,
                   help="etcd members (3: as etcd runs in production; ports etcd-2, etcd-3 and their -peer)")  # fmt: skip
    p.add_argument("--settings", choices=("test", "production"),
                   help="the real systems' settings (--brokers apache): test (default; MM2 and group delays in "
                        "seconds) or production (their defaults where one node allows it, docs/refcluster.md)")  # fmt: skip
    for kind in VERSIONED:
        p.add_argument(f"--{kind}-version", metavar="X.Y.Z",
                       help=f"the Apache {kind.capitalize()} version to run (--brokers apache; default "
                            f"{JarSet(kind).version}), "
                            "resolved from Maven Central on first use")  # fmt: skip
    p.set_defaults(func=up)
    p = rsub.add_parser("down", parents=[common, local], help="stop every process started by up")
    p.set_defaults(func=down)
    p = rsub.add_parser("status", parents=[common, local], help="processes, ports, logs, routes")
    p.set_defaults(func=status)
