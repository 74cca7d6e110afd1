"""The drain of a planned switch waits for the micro-batch running at the flip: a batch that
outlasts ``hotstandby.drain.timeout.ms`` must not end the drain before Spark could plan the
batch that reads the old cluster to its end (what only the old cluster holds — copies from a
cluster rebuilt empty since — would be left behind for good).

The planner runs against the reference cluster's etcd and its real switch protocol; the
clusters' offsets come from a stand-in plan, as a test of the planner's timing needs no records."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.ledger.staged import SwitchHints
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.refcluster import RefCluster
from hotstandby.spark_integration.source.cluster_plan import Arrival, PlanContext, ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import SourceOptions, parse_options
from hotstandby.spark_integration.source.stream_planner import StreamPlanner
from tests.integration.test_spark_source import options
from tests.support import wait_for

pytestmark = pytest.mark.integration

END_AT_FLIP = 100  # the old cluster's end offset when the route flips


def at(route: str, epoch: int, cluster: str, offset: int, **extra: Any) -> SourceOffset:
    return SourceOffset(route, epoch, cluster, {"t": {0: offset}}, **extra)


class StandIn:
    """A cluster whose partition ``t[0]`` grows by 10 per batch and ends at
    :data:`END_AT_FLIP` at the flip."""

    unreachable: tuple[type[BaseException], ...] = (ConnectionError,)

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.drain_asked = False

    def initial(self, route: str, epoch: int) -> SourceOffset:
        return at(route, epoch, self.spec.name, 0)

    def next(self, start: SourceOffset, drain_to: Any, limit: int | None) -> SourceOffset:
        end = drain_to if drain_to is not None else start.positions["t"][0] + 10
        return at(start.route, start.epoch, self.spec.name, end)

    def drain_target(self, planned: SourceOffset, plan: SwitchPlan) -> Any:
        self.drain_asked = True
        return END_AT_FLIP

    def drained(self, planned: SourceOffset, target: Any) -> bool:
        return bool(planned.positions["t"][0] >= target)

    def arrive(self, plan: SwitchPlan, planned: SourceOffset | None, hints: SwitchHints) -> Arrival:
        starts = at(plan.target.name, plan.target.epoch, self.spec.name, 0, starts={"t": {0: 0}})
        return Arrival(self, starts, {"beginning": 1}, plan.source.name, plan.current.epoch)

    def crossing(self, start: SourceOffset, arrival: Arrival, limit: int | None) -> SourceOffset:
        return at(start.route, arrival.epoch, self.spec.name, 10, starts={"t": {0: 0}})

    def tasks(self, start: SourceOffset, end: SourceOffset, batch: str, hints: SwitchHints) -> list[ReadsPartition]:
        return []

    def committed(self, end: SourceOffset) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def planned(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> Iterator[tuple[StreamPlanner, dict[str, StandIn], SourceOptions]]:
    opts = parse_options(options(refcluster, namespace, "t", **{"hotstandby.group": f"d-{uuid.uuid4().hex[:8]}",
                                                                "hotstandby.drain.timeout.ms": "1000"}),
                         streaming=True)  # fmt: skip
    plans: dict[str, StandIn] = {}

    def opener(spec: ClusterSpec, _options: SourceOptions, _context: PlanContext) -> StandIn:
        return plans.setdefault(spec.name, StandIn(spec))

    planner = StreamPlanner(opts, None, "kafka", opener)
    try:
        yield planner, plans, opts
    finally:
        planner.close()


def test_a_batch_running_longer_than_the_drain_timeout_does_not_cut_the_drain_short(
    planned: tuple[StreamPlanner, dict[str, StandIn], SourceOptions], center: ConfigCenter
) -> None:
    planner, plans, opts = planned
    end = planner.latest(planner.initial(), None)
    assert (end.cluster, end.positions) == ("kafka-a", {"t": {0: 10}})

    center.switch("orders", "kafka-b", reason="test: a planned flip")
    wait_for(lambda: plans["kafka-a"].drain_asked, timeout=30, what="the drain of kafka-a")
    time.sleep(2 * opts.drain_timeout_ms / 1000)  # the batch running at the flip outlasts the timeout

    drain = planner.latest(end, None)
    assert (drain.cluster, drain.positions) == ("kafka-a", {"t": {0: END_AT_FLIP}}), "kafka-a read to its end"

    def crossed() -> bool:
        return planner.latest(drain, None).cluster == "kafka-b"

    wait_for(crossed, timeout=30, what="the next batch on kafka-b")
