"""SRE commands on the config center: clusters, routes, switch, status."""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hotstandby.cli.output import emit, table
from hotstandby.configcenter import ConfigCenter
from hotstandby.documents import KINDS, ClusterSpec
from hotstandby.errors import UnknownRouteError
from hotstandby.presence import list_clients
from hotstandby.probe import ProbeResult, probe_cluster
from hotstandby.settings import Settings

__all__ = ["add_commands"]


def _center(args: argparse.Namespace) -> ConfigCenter:
    return ConfigCenter.open(Settings.resolve(etcd=args.etcd, namespace=args.namespace))


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


def clusters_list(args: argparse.Namespace) -> int:
    with _center(args) as center:
        snap = center.snapshot()
    rows = [(c.name, c.kind, c.url) for c in snap.clusters.values()]
    data: dict[str, Any] = {
        "clusters": [
            {"name": c.name, "kind": c.kind, "url": c.url, "client": dict(c.client),
             "producer": dict(c.producer), "consumer": dict(c.consumer)}
            for c in snap.clusters.values()
        ],
        "problems": [str(p) for p in snap.problems if "/clusters/" in str(p)],
    }  # fmt: skip
    human = table(("CLUSTER", "KIND", "URL"), rows)
    if data["problems"]:
        human += "\n\ninvalid:\n" + "\n".join(f"  {p}" for p in data["problems"])
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
        center.put_cluster(spec, replace=args.replace)
    emit(
        args.json,
        {"name": spec.name, "kind": spec.kind, "url": spec.url},
        f"cluster {spec.name} stored ({spec.kind}, {spec.url})",
    )
    return 0


def routes_list(args: argparse.Namespace) -> int:
    with _center(args) as center:
        snap = center.snapshot()
    routes = [_route_dict(r) for r in snap.routes.values()]
    problems = [str(p) for p in snap.problems if "/routes/" in str(p)]
    human = table(
        ("ROUTE", "ACTIVE", "EPOCH", "CLUSTERS", "AT", "BY", "REASON"),
        [(r["name"], r["active"], r["epoch"], ",".join(r["clusters"]), r["at"], r["by"], r["reason"]) for r in routes],
    )
    if problems:
        human += "\n\ninvalid:\n" + "\n".join(f"  {p}" for p in problems)
    emit(args.json, {"routes": routes, "problems": problems}, human)
    return 0


def routes_create(args: argparse.Namespace) -> int:
    clusters = [c.strip() for c in args.clusters.split(",") if c.strip()]
    with _center(args) as center:
        route = center.create_route(args.route, clusters, args.active or clusters[0])
    emit(args.json, _route_dict(route), f"route {route.name} created: active {route.active}, epoch {route.epoch}")
    return 0


def switch(args: argparse.Namespace) -> int:
    with _center(args) as center:
        before = center.route(args.route)
        route = center.switch(args.route, args.to, reason=args.reason or "")
    emit(
        args.json,
        {**_route_dict(route), "previous": before.active, "previous_epoch": before.epoch},
        f"route {route.name}: {before.active} -> {route.active}, epoch {before.epoch} -> {route.epoch}",
    )
    return 0


def status(args: argparse.Namespace) -> int:
    settings = Settings.resolve(etcd=args.etcd, namespace=args.namespace)
    with ConfigCenter.open(settings) as center:
        snap = center.snapshot()
        if args.route and args.route not in snap.routes:
            raise UnknownRouteError(f"unknown route {args.route!r}; known: {', '.join(sorted(snap.routes)) or 'none'}")
        clients = list_clients(center, args.route) if args.route else []
    routes = {args.route: snap.routes[args.route]} if args.route else snap.routes
    specs = list(snap.clusters.values())
    with ThreadPoolExecutor(max_workers=max(len(specs), 1)) as pool:
        probes: list[ProbeResult] = list(pool.map(lambda s: probe_cluster(s, timeout=args.timeout), specs))
    answers = {p.cluster: p for p in probes}

    def latency(name: str) -> float | None:
        ms = answers[name].latency_ms
        return None if ms is None else round(ms, 2)

    data: dict[str, Any] = {
        "etcd": [str(e) for e in settings.etcd],
        "namespace": settings.namespace,
        "revision": snap.revision,
        "routes": [_route_dict(r) for r in routes.values()],
        "clusters": [
            {
                "name": s.name,
                "kind": s.kind,
                "url": s.url,
                "answering": answers[s.name].ok,
                "latency_ms": latency(s.name),
                "detail": answers[s.name].detail,
            }
            for s in specs
        ],
        "problems": [str(p) for p in snap.problems],
    }
    if args.route:
        route = routes[args.route]
        specs = [c for c in specs if c.name in route.clusters]
        data["clusters"] = [c for c in data["clusters"] if c["name"] in route.clusters]
        data["clients"] = sorted(clients, key=lambda c: (c.get("cluster", ""), c.get("client", "")))
        data["clients_per_cluster"] = {
            name: sum(1 for c in clients if c.get("cluster") == name) for name in route.clusters
        }
    human = (
        f"etcd {','.join(data['etcd'])}  namespace {settings.namespace}  revision {snap.revision}\n\n"
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
        counts = ", ".join(f"{n} on {name}" for name, n in data["clients_per_cluster"].items())
        human += f"\n\nclients of {args.route}: {counts}\n" + table(
            ("CLIENT", "ROLE", "CLUSTER", "EPOCH", "STATE", "SWITCHES", "LAST_SWITCH_MS", "HOST", "PID"),
            [
                (c.get("client"), c.get("role"), c.get("cluster"), c.get("epoch"), c.get("state"),
                 c.get("switches"), c.get("last_switch_ms"), c.get("host"), c.get("pid"))
                for c in data["clients"]
            ],
        )  # fmt: skip
    if data["problems"]:
        human += "\n\ninvalid:\n" + "\n".join(f"  {p}" for p in data["problems"])
    emit(args.json, data, human)
    return 0


def add_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    """Register clusters, routes, switch and status on the top-level parser."""
    clusters = sub.add_parser("clusters", help="list or add cluster definitions")
    csub = clusters.add_subparsers(dest="action", required=True)
    p = csub.add_parser("list", parents=[common], help="list clusters")
    p.set_defaults(func=clusters_list)
    p = csub.add_parser("add", parents=[common], help="add a cluster definition")
    p.add_argument("name")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--url", required=True, help="bootstrap.servers (kafka) or service_url (pulsar)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="extra client setting (repeatable)")
    p.add_argument("--replace", action="store_true", help="overwrite an existing definition")
    p.set_defaults(func=clusters_add)

    routes = sub.add_parser("routes", help="list or create routes")
    rsub = routes.add_subparsers(dest="action", required=True)
    p = rsub.add_parser("list", parents=[common], help="list routes")
    p.set_defaults(func=routes_list)
    p = rsub.add_parser("create", parents=[common], help="create a route at epoch 1")
    p.add_argument("route")
    p.add_argument("--clusters", required=True, help="comma-separated cluster names")
    p.add_argument("--active", help="initially active cluster (default: the first)")
    p.set_defaults(func=routes_create)

    p = sub.add_parser("switch", parents=[common], help="flip a route's active cluster (epoch+1)")
    p.add_argument("route")
    p.add_argument("--to", required=True, metavar="CLUSTER")
    p.add_argument("--reason", help="why (stored with the route)")
    p.set_defaults(func=switch)

    p = sub.add_parser("status", parents=[common], help="routes, whether each cluster answers, a route's clients")
    p.add_argument("route", nargs="?", help="show only this route, with its clients per cluster")
    p.add_argument("--timeout", type=float, default=2.0, help="probe timeout per broker, seconds")
    p.set_defaults(func=status)
