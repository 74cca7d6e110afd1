"""The switch state machine with a scripted ``perform`` (no processes)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hotstandby.configcenter import RouteChange
from hotstandby.configcenter.documents import Route
from hotstandby.failover.switching import Switcher, SwitchState
from tests.support import capture_logs, wait_for


def route(active: str, epoch: int) -> Route:
    return Route(name="orders", active=active, clusters=("a", "b"), epoch=epoch)


def change(active: str, epoch: int) -> RouteChange:
    return RouteChange(route(active, epoch), None, epoch)


class Script:
    """A perform callback that records calls, can be held, and fails a given number of times."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.failures = failures
        self.gate = threading.Event()
        self.gate.set()
        self.states: list[SwitchState] = []

    def __call__(self, current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
        self.calls.append((current.active, target.active, target.epoch))
        set_state(SwitchState.DRAINING)
        self.states.append(SwitchState.DRAINING)
        assert self.gate.wait(10)
        set_state(SwitchState.SWITCHING)
        self.states.append(SwitchState.SWITCHING)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("new cluster refused")


def test_a_switch_runs_through_the_states_and_is_recorded() -> None:
    script = Script()
    sw = Switcher("p1", route("a", 1), script)
    try:
        sw.offer(change("b", 2))
        assert sw.wait_idle(10)
        assert sw.route.active == "b" and sw.route.epoch == 2 and sw.state is SwitchState.ACTIVE
        assert script.states == [SwitchState.DRAINING, SwitchState.SWITCHING]
        [record] = sw.history
        assert (record.from_cluster, record.to_cluster, record.epoch, record.attempts) == ("a", "b", 2, 1)
    finally:
        sw.close()


def test_epochs_arriving_during_a_switch_wait_and_only_the_newest_runs() -> None:
    script = Script()
    script.gate.clear()
    sw = Switcher("p1", route("a", 1), script)
    try:
        sw.offer(change("b", 2))
        wait_for(lambda: sw.state is SwitchState.DRAINING, 10, "the first switch to start")
        sw.offer(change("a", 3))
        sw.offer(change("b", 4))
        sw.offer(change("a", 2))  # stale: ignored
        script.gate.set()
        assert sw.wait_idle(10)
        assert script.calls == [("a", "b", 2)], "epoch 3 was superseded; epoch 4 needs no move"
        assert sw.route.epoch == 4 and sw.route.active == "b"
    finally:
        sw.close()


def test_a_failed_switch_is_retried_and_the_client_keeps_its_cluster_meanwhile() -> None:
    script = Script(failures=2)
    sw = Switcher("p1", route("a", 1), script, max_backoff=0.2)
    try:
        sw.offer(change("b", 2))
        wait_for(lambda: sw.failures >= 1, 10, "a failure")
        assert sw.route.active == "a", "a failed switch must leave the client where it was"
        assert sw.wait_idle(10)
        assert sw.route.active == "b" and sw.history[-1].attempts == 3 and sw.failures == 2
    finally:
        sw.close()


def test_a_newer_epoch_replaces_a_failing_switch() -> None:
    script = Script(failures=100)
    sw = Switcher("p1", route("a", 1), script, max_backoff=0.2)
    try:
        sw.offer(change("b", 2))
        wait_for(lambda: sw.failures >= 1, 10, "a failure")
        script.failures = 0
        sw.offer(change("a", 3))  # back to where we are: no move needed
        assert sw.wait_idle(10)
        assert sw.route.active == "a" and sw.route.epoch == 3
    finally:
        sw.close()


def test_a_target_that_does_not_answer_is_not_switched_to_until_it_does() -> None:
    script = Script()
    down = threading.Event()
    down.set()
    asked: list[str] = []

    def answers(target: Route) -> str | None:
        asked.append(target.active)
        return "b:1: ConnectionRefusedError" if down.is_set() else None

    with capture_logs() as logs:
        sw = Switcher("c1", route("a", 1), script, answers=answers, max_backoff=0.05)
        try:
            sw.offer(change("b", 2))
            wait_for(lambda: len(asked) >= 5, 10, "repeated checks of the target")
            assert script.calls == [], "the old cluster was given up for one that does not answer"
            assert sw.state is SwitchState.ACTIVE and sw.route.active == "a"
            down.clear()
            assert sw.wait_idle(10)
            assert sw.route.active == "b" and script.calls == [("a", "b", 2)]
            assert sw.history[0].attempts == 1 and sw.failures == 0 and sw.unreachable >= 5
        finally:
            sw.close()
    unreachable = [e for e in logs if e["event"] == "switch.target_unreachable"]
    assert len(unreachable) >= 5 and unreachable[0]["detail"] == "b:1: ConnectionRefusedError"
    assert [e["check"] for e in unreachable[:3]] == [1, 2, 3] and unreachable[0]["log_level"] == "warning"


def test_a_newer_epoch_replaces_a_target_that_does_not_answer() -> None:
    script = Script()
    sw = Switcher("c1", route("a", 1), script, answers=lambda t: "down" if t.active == "b" else None,
                  max_backoff=0.05)  # fmt: skip
    try:
        sw.offer(change("b", 2))
        wait_for(lambda: sw.unreachable >= 2, 10, "checks of b")
        sw.offer(change("a", 3))  # flipped back: nothing to move
        assert sw.wait_idle(10)
        assert script.calls == [] and (sw.route.active, sw.route.epoch) == ("a", 3)
    finally:
        sw.close()


def test_why_a_switch_has_not_completed_is_kept_and_announced_until_it_completes() -> None:
    script = Script(failures=1)
    down = threading.Event()
    down.set()
    sw = Switcher("c1", route("a", 1), script, answers=lambda t: "b:1: refused" if down.is_set() else None,
                  max_backoff=0.05)  # fmt: skip
    problems: list[str | None] = []
    sw.listen(lambda: problems.append(sw.problem))
    try:
        assert sw.problem is None
        sw.offer(change("b", 2))
        wait_for(lambda: sw.unreachable >= 3, 10, "checks of b")
        assert sw.problem == "b (epoch 2) does not answer: b:1: refused"
        assert len(problems) == 1, "announced once, not per check"
        down.clear()
        assert sw.wait_idle(10)
        assert sw.problem is None and sw.route.active == "b"
    finally:
        sw.close()
    unreachable = "b (epoch 2) does not answer: b:1: refused"
    failed = "switch to b (epoch 2), attempt 1, failed: ConnectionError('new cluster refused')"
    in_turn = [p for i, p in enumerate(problems) if i == 0 or p != problems[i - 1]]
    assert in_turn == [unreachable, failed, None], "each problem announced as it came, then its end"
