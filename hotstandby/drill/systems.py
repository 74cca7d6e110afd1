"""The drill's per-system parts, registered by kind.

Each module named here drills one messaging system (or an integration: Spark) through its SDK
clients and has ``run(rc, options, progress) -> DrillReport``; it is imported when that system
is drilled (it imports the system's client library). A system joins the drill with one line
here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import DrillOptions, DrillProgress
from hotstandby.errors import ValidationError
from hotstandby.refcluster import RefCluster
from hotstandby.registry import import_for_kind

__all__ = ["DRILLS", "SystemDrill", "drill_system"]

DRILLS: dict[str, str] = {
    "kafka": "hotstandby.drill.kafka",
    "pulsar": "hotstandby.drill.pulsar",
    "spark": "hotstandby.drill.spark",
}
# A drill of an integration rather than a messaging system: the adapter whose library it needs.
_ADAPTER = {"spark": "kafka"}


class SystemDrill(Protocol):
    def __call__(
        self, rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None
    ) -> DrillReport: ...


def drill_system(
    kind: str, rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None
) -> DrillReport:
    """Drill the ``kind`` clients on the (running) reference cluster ``rc``."""
    if kind not in DRILLS:
        raise ValidationError("system", f"no drill for {kind!r}; known: {', '.join(DRILLS)}")
    run = cast(SystemDrill, import_for_kind(_ADAPTER.get(kind, kind), DRILLS[kind]).run)
    return run(rc, options, progress)
