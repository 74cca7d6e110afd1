"""SRE commands on the config center: clusters, routes, switch, status."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hotstandby.cli.output import emit, invalid_section, table
from hotstandby.cli.status_verdict import DEFAULT_SWITCH_GRACE_S, verdict
from hotstandby.configcenter import ConfigCenter, Snapshot
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.errors import ClusterNotAnswering, HotStandbyError, UnknownRouteError, ValidationError
from hotstandby.failover.presence import read_clients
from hotstandby.failover.probe import ProbeResult, probe_cluster
from hotstandby.registry import kinds
from hotstandby.secret_refs import literal_secrets, redact_value
from hotstandby.settings import Settings

__all__ = ["add_commands"]


def cli_settings(args: argparse.Namespace) -> Settings:
    """The config center the command's flags (then the environment) name."""
    return Settings.resolve(etcd=args.etcd, namespace=args.namespace, etcd_ca=args.etcd_ca, etcd_cert=args.etcd_cert,
                            etcd_key=args.etcd_key, etcd_user=args.etcd_user)  # fmt: skip


def _center(args: argparse.Namespace) -> ConfigCenter:
    return ConfigCenter.open(cli_settings(args))


def _problem(problem: HotStandbyError) -> dict[str, str]:
    """An invalid entry as key and reason."""
    if isinstance(problem, ValidationError):
        return {"key": problem.key, "reason": problem.problem}
    key, _, reason = str(problem).partition(": ")  # UnknownClusterError and the like: "<key>: <reason>"
    return {"key": key, "reason": reason}


def _invalid(snap: Snapshot, prefix: str) -> list[dict[str, str]]:
    """The snapshot's problems under ``prefix``."""
    return [p for p in map(_problem, snap.problems) if p["key"].startswith(prefix)]


def _route_dict(route: Any) -> dict[str, Any]:
    return {
        "name": route.name,
        "active": route.active,
        "clusters": list(route.clusters),
        "epoch": route.epoch,
        "reason": route.reason,
        "by": route.by,
        "at": route.at,
    }


def _shown(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Client settings as output shows them: literal secrets as ``***`` (references as they are)."""
    return {k: redact_value(k, v) for k, v in settings.items()}


def clusters_list(args: argparse.Namespace) -> int:
    with _center(args) as center:
        snap = center.snapshot()
    rows = [(c.name, c.kind, redact_value("url", c.url)) for c in snap.clusters.values()]
    data: dict[str, Any] = {
        "clusters": [
            {"name": c.name, "kind": c.kind, "url": redact_value("url", c.url), "client": _shown(c.client),
             "producer": _shown(c.producer), "consumer": _shown(c.consumer)}
            for c in snap.clusters.values()
        ],
        "invalid": _invalid(snap, center.keys.clusters),
    }  # fmt: skip
    human = table(("CLUSTER", "KIND", "URL"), rows) + invalid_section(data["invalid"])
    emit(args.json, data, human)
    return 0


def clusters_add(args: argparse.Namespace) -> int:
    settings: dict[str, str] = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        settings[key] = value
    # Round-trip through the parser so the CLI applies exactly the checks a read applies.
    spec = ClusterSpec(name=args.name, kind=args.kind, url=args.url, client=settings)
    spec = ClusterSpec.from_json(args.name, spec.to_json())
    with _center(args) as center:
        center.put_cluster(spec, replace=args.replace, allow_literal=args.allow_literal)
    literal = literal_secrets({"url": spec.url, **spec.client})
    if literal:
        print(f"warning: {', '.join(literal)} stored literally in etcd, readable by everyone who can read it; "
              "prefer ${env:NAME} or ${file:PATH}", file=sys.stderr)  # fmt: skip
    emit(
        args.json,
        {"name": spec.name, "kind": spec.kind, "url": redact_value("url", spec.url)},
        f"cluster {spec.name} stored ({spec.kind}, {redact_value('url', spec.url)})",
    )
    return 0


def routes_list(args: argparse.Namespace) -> int:
    with _center(args) as center:
        snap = center.snapshot()
    routes = [_route_dict(r) for r in snap.routes.values()]
    invalid = _invalid(snap, center.keys.routes)
    human = table(
        ("ROUTE", "ACTIVE", "EPOCH", "CLUSTERS", "AT", "BY", "REASON"),
        [(r["name"], r["active"], r["epoch"], ",".join(r["clusters"]), r["at"], r["by"], r["reason"]) for r in routes],
    ) + invalid_section(invalid)
    emit(args.json, {"routes": routes, "invalid": invalid}, human)
    return 0


def routes_create(args: argparse.Namespace) -> int:
    clusters = [c.strip() for c in args.clusters.split(",") if c.strip()]
    with _center(args) as center:
        route = center.create_route(args.route, clusters, args.active or clusters[0])
    emit(args.json, _route_dict(route), f"route {route.name} created: active {route.active}, epoch {route.epoch}")
    return 0


def routes_delete(args: argparse.Namespace) -> int:
    with _center(args) as center:
        deleted = center.delete_route(args.route)
        floor, _ = center.epoch_floor(args.route)
    epoch = floor.epoch if floor else None
    emit(
        args.json,
        {"name": args.route, "deleted": _route_dict(deleted) if deleted else None, "epoch_floor": epoch},
        f"route {args.route} deleted; created again it starts at epoch {(epoch or 0) + 1}",
    )
    return 0


def _probe_target(args: argparse.Namespace) -> Callable[[ClusterSpec], None] | None:
    """The check run on the target before a flip is written: it must answer, unless --force."""

    def check(spec: ClusterSpec) -> None:
        result = probe_cluster(spec, timeout=args.probe_timeout)
        if not result.ok:
            raise ClusterNotAnswering(
                f"cluster {spec.name!r} ({redact_value('url', spec.url)}) does not answer: {result.detail}. "
                "The route was not changed; clients would not be able to work there. Use --force to flip anyway."
            )

    return None if args.force else check


def switch(args: argparse.Namespace) -> int:
    with _center(args) as center:
        before = center.last_route(args.route)
        route = center.switch(
            args.route,
            args.to,
            reason=args.reason or "",
            expect_epoch=args.expect_epoch,
            before_write=_probe_target(args),
        )
    emit(
        args.json,
        {**_route_dict(route), "previous": before.active, "previous_epoch": before.epoch},
        f"route {route.name}: {before.active} -> {route.active}, epoch {before.epoch} -> {route.epoch}",
    )
    return 0


def _disagreements(route: Route, clients: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Running clients whose cluster or epoch differ from the stored route."""
    return [
        {"route": route.name, "client": c.get("client"), "cluster": c.get("cluster"), "epoch": c.get("epoch"),
         "state": c.get("state"), "expected_cluster": route.active, "expected_epoch": route.epoch}
        for c in clients
        if c.get("cluster") != route.active or c.get("epoch") != route.epoch
    ]  # fmt: skip


def status(args: argparse.Namespace) -> int:
    settings = cli_settings(args)
    with ConfigCenter.open(settings) as center:
        snap = center.snapshot()
        invalid_routes = _invalid(snap, center.keys.routes)
        invalid_keys = {p["key"] for p in invalid_routes}
        if args.route and args.route not in snap.routes and center.keys.route(args.route) not in invalid_keys:
            raise UnknownRouteError(f"unknown route {args.route!r}; known: {', '.join(sorted(snap.routes)) or 'none'}")
        names = [args.route] if args.route else sorted(snap.routes)
        clients: dict[str, list[dict[str, Any]]] = {}
        problems: list[HotStandbyError] = list(snap.problems)
        for name in names:
            clients[name], bad = read_clients(center, name)
            problems.extend(bad)
    routes = {n: snap.routes[n] for n in names if n in snap.routes}
    specs = list(snap.clusters.values())
    if args.route in routes:
        specs = [c for c in specs if c.name in routes[args.route].clusters]
    with ThreadPoolExecutor(max_workers=max(len(specs), 1)) as pool:
        probes: list[ProbeResult] = list(pool.map(lambda s: probe_cluster(s, timeout=args.timeout), specs))
    answers = {p.cluster: p for p in probes}

    def latency(name: str) -> float | None:
        ms = answers[name].latency_ms
        return None if ms is None else round(ms, 2)

    disagree = [d for name, route in routes.items() for d in _disagreements(route, clients[name])]
    data: dict[str, Any] = {
        "etcd": [str(e) for e in settings.etcd],
        "namespace": settings.namespace,
        "revision": snap.revision,
        "routes": [_route_dict(r) for r in routes.values()],
        "clusters": [
            {
                "name": s.name,
                "kind": s.kind,
                "url": redact_value("url", s.url),
                "answering": answers[s.name].ok,
                "latency_ms": latency(s.name),
                "detail": answers[s.name].detail,
            }
            for s in specs
        ],
        "disagreeing_clients": disagree,
        "invalid": [_problem(p) for p in problems],
    }
    found = verdict(routes, {name: p.ok for name, p in answers.items()}, clients, now=time.time(),
                    grace_s=args.switch_grace)  # fmt: skip
    data["health"] = found.as_dict()
    if args.route:
        route_clients = clients[args.route]
        data["clients"] = sorted(route_clients, key=lambda c: (str(c.get("cluster", "")), str(c.get("client", ""))))
        if args.route in routes:
            data["clients_per_cluster"] = {
                name: sum(1 for c in route_clients if c.get("cluster") == name) for name in routes[args.route].clusters
            }
    emit(args.json, data, _status_text(args, settings, snap.revision, data))
    return 1 if args.route and args.route not in routes else found.code


def _status_text(args: argparse.Namespace, settings: Settings, revision: int, data: dict[str, Any]) -> str:
    human = (
        f"etcd {','.join(data['etcd'])}  namespace {settings.namespace}  revision {revision}\n\n"
        + table(
            ("ROUTE", "ACTIVE", "EPOCH", "CLUSTERS"),
            [(r["name"], r["active"], r["epoch"], ",".join(r["clusters"])) for r in data["routes"]],
        )
        + "\n\n"
        + table(
            ("CLUSTER", "KIND", "URL", "ANSWERS", "LATENCY_MS", "DETAIL"),
            [
                (c["name"], c["kind"], c["url"], "yes" if c["answering"] else "NO", c["latency_ms"], c["detail"])
                for c in data["clusters"]
            ],
        )
    )
    if args.route:
        counts = ", ".join(f"{n} on {name}" for name, n in data.get("clients_per_cluster", {}).items())
        human += f"\n\nclients of {args.route}: {counts or 'route invalid'}\n" + table(
            ("CLIENT", "ROLE", "CLUSTER", "EPOCH", "STATE", "SWITCHES", "LAST_SWITCH_MS", "HOST", "PID"),
            [
                (c.get("client"), c.get("role"), c.get("cluster"), c.get("epoch"), c.get("state"),
                 c.get("switches"), c.get("last_switch_ms"), c.get("host"), c.get("pid"))
                for c in data["clients"]
            ],
        )  # fmt: skip
    if data["disagreeing_clients"]:
        human += "\n\nclients that disagree with the stored route:\n" + table(
            ("ROUTE", "CLIENT", "CLUSTER", "EPOCH", "STATE", "STORED_ACTIVE", "STORED_EPOCH"),
            [
                (d["route"], d["client"], d["cluster"], d["epoch"], d["state"], d["expected_cluster"],
                 d["expected_epoch"])
                for d in data["disagreeing_clients"]
            ],
        )  # fmt: skip
    health = data["health"]
    for down in health["active_not_answering"]:
        human += f"\n\nACTIVE CLUSTER NOT ANSWERING: {down}"
    if health["clients_behind"]:
        human += f"\n\nclients behind their route for longer than {args.switch_grace:g} s: " + ", ".join(
            f"{c['client']} ({c['problem']})" if c.get("problem") else str(c["client"])
            for c in health["clients_behind"]
        )
    return human + invalid_section(data["invalid"])


_STATUS_EXIT = """exit status:
  0  every route's active cluster answers, every client runs where its route says
  1  error (etcd unreachable, unknown route, the named route's document invalid)
  2  bad usage
  3  a route's active cluster does not answer
  4  a client runs on another cluster or epoch than its route for longer than --switch-grace
     (counted from the flip); 3 wins when both apply"""


def add_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    """Register clusters, routes, switch and status on the top-level parser."""
    clusters = sub.add_parser("clusters", help="list or add cluster definitions")
    csub = clusters.add_subparsers(dest="action", required=True)
    p = csub.add_parser("list", parents=[common], help="list clusters")
    p.set_defaults(func=clusters_list)
    p = csub.add_parser("add", parents=[common], help="add a cluster definition")
    p.add_argument("name")
    p.add_argument("--kind", required=True, choices=kinds())
    p.add_argument("--url", required=True, help="bootstrap.servers (kafka) or service_url (pulsar)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="extra client setting (repeatable)")
    p.add_argument("--replace", action="store_true", help="overwrite an existing definition")
    p.add_argument("--allow-literal", action="store_true",
                   help="store a secret-bearing setting that is not a ${env:NAME}/${file:PATH} reference (warned)")  # fmt: skip
    p.set_defaults(func=clusters_add)

    routes = sub.add_parser("routes", help="list or create routes")
    rsub = routes.add_subparsers(dest="action", required=True)
    p = rsub.add_parser("list", parents=[common], help="list routes")
    p.set_defaults(func=routes_list)
    p = rsub.add_parser("create", parents=[common], help="create a route (epoch 1, or above a deleted one's)")
    p.add_argument("route")
    p.add_argument("--clusters", required=True, help="comma-separated cluster names")
    p.add_argument("--active", help="initially active cluster (default: the first)")
    p.set_defaults(func=routes_create)
    p = rsub.add_parser("delete", parents=[common], help="delete a route, keeping its last epoch")
    p.add_argument("route")
    p.set_defaults(func=routes_delete)

    p = sub.add_parser("switch", parents=[common], help="flip a route's active cluster (next epoch)")
    p.add_argument("route")
    p.add_argument("--to", required=True, metavar="CLUSTER")
    p.add_argument("--reason", help="why (stored with the route)")
    p.add_argument("--expect-epoch", type=int, metavar="N", help="refuse unless the route is at epoch N (atomic)")
    p.add_argument("--force", action="store_true", help="flip even if the target cluster does not answer a probe")
    p.add_argument("--probe-timeout", type=float, default=2.0, help="probe timeout per broker, seconds")
    p.set_defaults(func=switch)

    p = sub.add_parser("status", parents=[common], help="routes, whether each cluster answers, a route's clients",
                       epilog=_STATUS_EXIT, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("route", nargs="?", help="show only this route, with its clients per cluster")
    p.add_argument("--timeout", type=float, default=2.0, help="probe timeout per broker, seconds")
    p.add_argument("--switch-grace", type=float, default=DEFAULT_SWITCH_GRACE_S, metavar="SECONDS",
                   help="how long a client may run on another cluster or epoch than its route after a flip "
                   f"(default {DEFAULT_SWITCH_GRACE_S:g})")  # fmt: skip
    p.set_defaults(func=status)
