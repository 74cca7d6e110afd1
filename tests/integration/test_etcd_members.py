"""A three-member etcd losing its leader under the SDK's clients: once under traffic, once
while the clients follow a flip. They go on, each flip is applied once by each client, and
nothing is lost or duplicated. It starts its own lite cluster whichever tier runs it, and
runs in the real-broker tier, to keep the default suite short."""

from __future__ import annotations

import collections
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hotstandby.drill import DrillOptions
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.errors import RefClusterError
from hotstandby.refcluster import Ports, RefCluster
from tests.support import capture_logs, wait_for

pytestmark = [pytest.mark.apache, pytest.mark.real_tier_only]


@pytest.fixture(scope="module")
def three_members(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    rc = RefCluster(tmp_path_factory.mktemp("etcd3"), Ports.free(), etcd_members=3)
    try:
        rc.up()
        yield rc
    finally:
        rc.down()


def new_leader(rc: RefCluster, old: str) -> str:
    def elected() -> str | None:
        try:
            leader = rc.etcd_leader()
        except RefClusterError:
            return None
        return leader if leader != old else None

    return wait_for(elected, 30, f"a leader other than {old}")


class LeaderKills(KafkaWorkload):
    """The Kafka drill's workload, with the etcd leader SIGKILLed mid-stream before the first
    flip (and started again once another leads) and right after the second flip is written."""

    def __init__(self, rc: RefCluster) -> None:
        super().__init__(new_run_id())
        self.rc = rc
        self.killed: list[str] = []
        self.elections: list[float] = []  # seconds until another member led

    def kill_leader(self) -> str:
        leader = self.rc.etcd_leader()
        self.rc.kill(leader, signal.SIGKILL)
        self.killed.append(leader)
        return leader

    def elected(self, killed: str) -> None:
        started = time.monotonic()
        new_leader(self.rc, killed)
        self.elections.append(time.monotonic() - started)

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        super().before_flip(k, ctx)
        if k == 0:
            killed = self.kill_leader()
            self.elected(killed)
            self.rc.restart(killed)

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        super().after_flip(k, ctx)
        if k == 1:
            self.elected(self.kill_leader())


def test_the_etcd_leader_killed_under_traffic_and_during_a_flip(three_members: RefCluster) -> None:
    rc = three_members
    assert len(rc.etcd_access().ports) == 3, "clients are given every member"
    workload = LeaderKills(rc)
    options = DrillOptions(messages=6000, switches=2, consumers=2, settle_s=2, timeout_s=240)
    try:
        with capture_logs() as events:
            report = run_drill(rc, options, workload)  # a client's exception fails the drill
    finally:
        for member in rc.etcd_names:
            if not rc.running()[member]:
                rc.restart(member)
    assert len(workload.killed) == 2
    print(
        f"[measure] etcd leader killed twice: new leader after {[round(s, 2) for s in workload.elections]} s; "
        f"flips {[s.latency_ms for s in report.switches]} ms; {report.produced} records"
    )
    assert (report.lost, report.duplicated) == (0, 0), report
    assert len(report.switches) == 2 and all(s.latency_ms is not None for s in report.switches), report.switches
    completed: collections.Counter[tuple[Any, Any]] = collections.Counter(
        (e["client"], e["epoch"]) for e in events if e["event"] == "switch.completed"
    )
    assert completed, "the clients switched"
    assert set(completed.values()) == {1}, f"a flip applied more than once: {completed}"
    clients = {client for client, _ in completed}
    assert len(completed) == 2 * len(clients), f"every client applied both flips: {sorted(completed)}"
