"""``hotstandby status``'s exit status, from what it read and probed (no I/O here).

==  ===========================================================================================
0   every route's active cluster answers and every client runs where its route says
1   error: etcd unreachable, an unknown route named, a named route's document invalid
2   bad usage
3   a route's active cluster does not answer
4   clients disagree with their route — on another cluster or epoch — for longer than a
    switch takes (``--switch-grace``, counted from the flip, the route's ``at``; from the
    client's last update when the route has no readable ``at``)
==  ===========================================================================================

When both 3 and 4 apply, the status is 3: the clients cannot follow a route to a cluster that
does not answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hotstandby.configcenter.documents import Route
from hotstandby.configcenter.route_document import parse_iso

__all__ = ["EXIT_ACTIVE_DOWN", "EXIT_CLIENTS_BEHIND", "EXIT_OK", "Verdict", "disagreeing_for", "verdict"]

EXIT_OK = 0
EXIT_ACTIVE_DOWN = 3
EXIT_CLIENTS_BEHIND = 4

#: Default ``--switch-grace``: a switch's drain (10 s by default), the wait for the group's
#: other members (as long again) and connecting to the new cluster.
DEFAULT_SWITCH_GRACE_S = 30.0


@dataclass(frozen=True)
class Verdict:
    """The exit status and why: routes whose active cluster does not answer (``route:
    cluster``), and the clients behind their route for longer than the grace."""

    code: int
    active_down: list[str] = field(default_factory=list)
    clients_behind: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"exit_code": self.code, "active_not_answering": self.active_down, "clients_behind": self.clients_behind}


def _timestamp(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    parsed = parse_iso(value) if isinstance(value, str) else None
    return None if parsed is None else parsed.timestamp()


def disagreeing_for(route: Route, client: Mapping[str, Any], now: float) -> float | None:
    """How long (at least) ``client`` has disagreed with ``route``: since the flip (the route's
    ``at``), else since the client last changed its presence (``updated``); None if neither is
    known."""
    since = _timestamp(route.at)
    if since is None:
        since = _timestamp(client.get("updated"))
    return None if since is None else max(0.0, now - since)


def verdict(
    routes: Mapping[str, Route],
    answering: Mapping[str, bool],
    clients: Mapping[str, list[dict[str, Any]]],
    *,
    now: float,
    grace_s: float = DEFAULT_SWITCH_GRACE_S,
) -> Verdict:
    """The exit status for ``routes`` (by name), whether each cluster answers (a cluster not
    probed counts as not answering) and each route's clients (presence documents)."""
    down = [f"{name}: {r.active}" for name, r in sorted(routes.items()) if not answering.get(r.active, False)]
    behind = []
    for name, route in sorted(routes.items()):
        for c in clients.get(name, []):
            if c.get("cluster") == route.active and c.get("epoch") == route.epoch:
                continue
            lasted = disagreeing_for(route, c, now)
            if lasted is None or lasted > grace_s:
                behind.append({"route": name, "client": c.get("client"), "cluster": c.get("cluster"),
                               "epoch": c.get("epoch"), "for_s": None if lasted is None else round(lasted, 1),
                               "problem": c.get("problem")})  # fmt: skip
    code = EXIT_ACTIVE_DOWN if down else EXIT_CLIENTS_BEHIND if behind else EXIT_OK
    return Verdict(code, down, behind)
