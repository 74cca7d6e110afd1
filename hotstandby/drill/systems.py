"""The drill's per-system parts, registered by kind.

Each module named here drills one messaging system (or an integration: Spark) through its SDK
clients and has ``run(rc, options, progress) -> DrillReport``; a messaging system's also has
``WORKLOAD``, its workload class (``WORKLOAD(run_id)``), whose producer an integration's drill
uses (:func:`feed_workload`). A module is imported when that system is drilled (it imports the
system's client library). A system joins the drill with one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import DrillOptions, DrillProgress, Workload
from hotstandby.errors import ValidationError
from hotstandby.refcluster import RefCluster
from hotstandby.registry import import_for_kind

__all__ = ["DRILLS", "ROUTES", "SystemDrill", "drill_system", "feed_workload", "route_system"]

DRILLS: dict[str, str] = {
    "kafka": "hotstandby.drill.kafka",
    "pulsar": "hotstandby.drill.pulsar",
    "spark": "hotstandby.drill.spark",
}
# A drill of an integration rather than a messaging system: the reference cluster's routes it
# can read (the first is its default), each with the system whose drill's producer feeds it and
# whose adapter (client library) it needs.
ROUTES: dict[str, dict[str, str]] = {"spark": {"orders": "kafka", "payments": "pulsar"}}


class SystemDrill(Protocol):
    def __call__(
        self, rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None
    ) -> DrillReport: ...


def drill_system(
    kind: str, rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None
) -> DrillReport:
    """Drill the ``kind`` clients on the (running) reference cluster ``rc`` (an integration's on
    ``options.route``)."""
    if kind not in DRILLS:
        raise ValidationError("system", f"no drill for {kind!r}; known: {', '.join(DRILLS)}")
    adapter = route_system(kind, options.route) if kind in ROUTES else kind
    if kind not in ROUTES and options.route is not None:
        raise ValidationError("route", f"the {kind} drill has its own; one is chosen for {', '.join(ROUTES)} only")
    run = cast(SystemDrill, import_for_kind(adapter, DRILLS[kind]).run)
    return run(rc, options, progress)


def route_system(kind: str, route: str | None) -> str:
    """The messaging system of ``route`` (None: the default) as the ``kind`` integration's drill
    reads it."""
    routes = ROUTES[kind]
    if route is None:
        return next(iter(routes.values()))
    if route not in routes:
        raise ValidationError("route", f"the {kind} drill reads {', '.join(routes)}; not {route!r}")
    return routes[route]


def feed_workload(system: str, run: str) -> Workload:
    """A fresh workload of the ``system`` drill (run id ``run``), whose producer and topic an
    integration's drill uses."""
    module = import_for_kind(system, DRILLS[system])
    return cast(Callable[[str], Workload], module.WORKLOAD)(run)
