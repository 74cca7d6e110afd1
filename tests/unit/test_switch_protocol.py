"""The switch protocol's order of steps, the gate around them, and abort on failure."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchParticipant, SwitchPlan, run_switch
from hotstandby.failover.switching import SwitchState


def _plan() -> SwitchPlan:
    a = ClusterSpec(name="a", kind="kafka", url="127.0.0.1:1")
    b = ClusterSpec(name="b", kind="kafka", url="127.0.0.1:2")
    return SwitchPlan(
        Route(name="r", clusters=("a", "b"), active="a", epoch=1),
        Route(name="r", clusters=("a", "b"), active="b", epoch=2),
        a,
        b,
        {},
        1.0,
    )


class Recorder:
    def __init__(self, gate: SwitchGate, fail_in: str = "", labels: Mapping[str, str] | None = None) -> None:
        self.gate, self.fail_in, self.peer_labels = gate, fail_in, labels
        self.steps: list[tuple[str, bool]] = []  # (step, gate closed during it)

    def _step(self, name: str) -> None:
        self.steps.append((name, self.gate.closed))
        if name == self.fail_in:
            raise RuntimeError(name)

    def drain(self, plan: SwitchPlan) -> None:
        self._step("drain")

    def store(self, plan: SwitchPlan) -> None:
        self._step("store")

    def connect(self, plan: SwitchPlan) -> None:
        self._step("connect")

    def move(self, plan: SwitchPlan) -> None:
        self._step("move")

    def resume(self, plan: SwitchPlan) -> None:
        self._step("resume")

    def abort(self, plan: SwitchPlan) -> None:
        self._step("abort")


def test_steps_run_in_order_with_the_gate_closed_from_store_to_move() -> None:
    gate = SwitchGate()
    part = Recorder(gate, labels={"group": "g"})
    assert isinstance(part, SwitchParticipant)
    states: list[SwitchState] = []
    waited: list[Mapping[str, str]] = []

    def wait_peers(target: Route, timeout: float, labels: Mapping[str, str]) -> list[str]:
        waited.append(labels)
        return []

    run_switch(part, gate, _plan(), states.append, wait_peers)
    assert part.steps == [("drain", False), ("store", True), ("connect", True), ("move", True), ("resume", False)]
    assert states == [SwitchState.DRAINING, SwitchState.SWITCHING]
    assert waited == [{"group": "g"}]
    assert not gate.closed


@pytest.mark.parametrize("step", ["store", "connect"])
def test_a_failed_step_aborts_opens_the_gate_and_raises(step: str) -> None:
    gate = SwitchGate()
    part = Recorder(gate, fail_in=step)
    with pytest.raises(RuntimeError, match=step):
        run_switch(part, gate, _plan(), lambda s: None, lambda t, s, labels: [])
    names = [name for name, _ in part.steps]
    assert names[-1] == "abort" and "move" not in names and "resume" not in names
    assert not gate.closed


def test_a_read_waits_while_the_gate_is_closed_and_never_past_its_timeout() -> None:
    gate = SwitchGate()
    gate.close()
    assert gate.wait_open(0.05) is False
    opened = threading.Timer(0.05, gate.open)
    opened.start()
    assert gate.wait_open(5.0) is True
    opened.join()
