"""Where one streaming query's planning stands, shared by its planner
(:class:`~hotstandby.spark_integration.source.stream_planner.StreamPlanner`) and its switch
participant (:class:`~hotstandby.spark_integration.source.planner_switch.PlannerSwitch`)."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from hotstandby.failover.ledger.staged import SwitchHints
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.spark_integration.source.cluster_plan import Arrival, ClusterPlan
from hotstandby.spark_integration.source.offsets import SourceOffset

__all__ = ["PlanState", "batch_name"]


def batch_name(end: SourceOffset) -> str:
    """The name a batch's staged acknowledgements are kept under: a digest of its end offset."""
    text = json.dumps(end.to_dict(), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class PlanState:
    """The cluster plan in use and its epoch, the last batch end planned, and what a switch
    leaves for planning (a drain target, an arrival). ``gate.lock`` guards it all; the gate
    holds ``latestOffset`` while a switch runs."""

    def __init__(self, cluster: ClusterPlan, epoch: int, planned: SourceOffset | None) -> None:
        self.gate = SwitchGate(threading.RLock())
        self.cluster = cluster
        self.epoch = epoch
        self.planned = planned  # the end of the last batch planned
        self.asked = 0  # latestOffset calls: Spark asks once the running batch has ended
        self.drain_to: Any = None  # the old cluster's drain target, while a drain runs
        self.arrival: Arrival | None = None  # the new cluster's starts, until a batch is planned there
        self.hints = SwitchHints()  # from committed batches

    @property
    def lock(self) -> threading.Condition:
        return self.gate.lock
