"""``hotstandby status``'s exit status from what it read and probed (no processes)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from hotstandby.cli import build_parser
from hotstandby.cli.status_verdict import EXIT_ACTIVE_DOWN, EXIT_CLIENTS_BEHIND, EXIT_OK, disagreeing_for, verdict
from hotstandby.configcenter.documents import Route

NOW = 1_800_000_000.0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def _route(active: str = "a", epoch: int = 2, flipped_s_ago: float | None = 120.0) -> Route:
    at = "" if flipped_s_ago is None else _iso(NOW - flipped_s_ago)
    return Route(name="orders", active=active, clusters=("a", "b"), epoch=epoch, at=at)


def _client(cluster: str = "a", epoch: int = 2, **extra: Any) -> dict[str, Any]:
    return {"client": f"c-{cluster}-{epoch}", "cluster": cluster, "epoch": epoch, "state": "active", **extra}


def test_all_well_is_0() -> None:
    found = verdict({"orders": _route()}, {"a": True, "b": False}, {"orders": [_client()]}, now=NOW)
    assert found.code == EXIT_OK and found.as_dict() == {"exit_code": 0, "active_not_answering": [],
                                                         "clients_behind": []}  # fmt: skip


def test_an_active_cluster_not_answering_is_3_a_standby_not_answering_is_not() -> None:
    assert verdict({"orders": _route("b")}, {"a": True, "b": False}, {}, now=NOW).code == EXIT_ACTIVE_DOWN
    assert verdict({"orders": _route("b")}, {"a": True}, {}, now=NOW).active_down == ["orders: b"], "not probed"
    assert verdict({"orders": _route("a")}, {"a": True, "b": False}, {}, now=NOW).code == EXIT_OK


def test_clients_behind_for_longer_than_a_switch_is_4() -> None:
    clients = {"orders": [_client(), _client("b", 1)]}
    found = verdict({"orders": _route(flipped_s_ago=120)}, {"a": True}, clients, now=NOW, grace_s=30)
    assert found.code == EXIT_CLIENTS_BEHIND
    assert found.clients_behind == [{"route": "orders", "client": "c-b-1", "cluster": "b", "epoch": 1, "for_s": 120.0,
                                     "problem": None}]  # fmt: skip
    # Same cluster, older epoch: behind too.
    assert verdict({"orders": _route()}, {"a": True}, {"orders": [_client("a", 1)]}, now=NOW).code == 4


def test_a_client_still_switching_within_the_grace_is_fine() -> None:
    clients = {"orders": [_client("b", 1)]}
    assert verdict({"orders": _route(flipped_s_ago=5)}, {"a": True}, clients, now=NOW, grace_s=30).code == EXIT_OK


def test_without_a_flip_time_the_clients_last_update_counts_then_unknown_counts_as_behind() -> None:
    route = _route(flipped_s_ago=None)
    assert disagreeing_for(route, _client("b", 1, updated=NOW - 10), NOW) == 10
    assert verdict({"orders": route}, {"a": True}, {"orders": [_client("b", 1, updated=NOW - 10)]}, now=NOW).code == 0
    assert verdict({"orders": route}, {"a": True}, {"orders": [_client("b", 1)]}, now=NOW).code == 4


def test_an_active_cluster_down_wins_over_clients_behind() -> None:
    found = verdict({"orders": _route()}, {"a": False}, {"orders": [_client("b", 1)]}, now=NOW)
    assert found.code == EXIT_ACTIVE_DOWN and found.clients_behind


def test_the_help_documents_the_exit_codes() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["status"].format_help()  # type: ignore[attr-defined]
    for line in ("0  every route's active cluster answers", "3  a route's active cluster does not answer",
                 "4  a client runs on another cluster or epoch", "--switch-grace"):  # fmt: skip
        assert line in text, line


def test_a_client_behind_says_why_its_switch_has_not_completed() -> None:
    stuck = _client("b", 1, problem="a (epoch 2) does not answer: a:1: refused")
    found = verdict({"orders": _route(flipped_s_ago=120)}, {"a": True}, {"orders": [stuck]}, now=NOW, grace_s=30)
    assert [c["problem"] for c in found.clients_behind] == ["a (epoch 2) does not answer: a:1: refused"]
