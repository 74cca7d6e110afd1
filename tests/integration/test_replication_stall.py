"""Replication to the standby stalling, then a flip: the replicator copying kafka-a to kafka-b
is stopped (SIGSTOP: its connections stay open, nothing moves) while the drill's producer
goes on; then kafka-a is SIGKILLed (it comes back empty) and the route flips to kafka-b. What
replication had not copied is only in the producer's replay window, which re-sends it to
kafka-b; consumers lose and duplicate nothing."""

from __future__ import annotations

import os
import signal

import pytest

from hotstandby.drill import DrillOptions
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.processes import is_running
from tests.support import wait_for

REPLICATOR = "mirror-kafka-a-to-kafka-b"
UNCOPIED = 800  # records produced while replication stands still, before the flip


class ReplicationStalls(KafkaWorkload):
    def __init__(self, rc: RefCluster) -> None:
        super().__init__(new_run_id())
        info = (rc.state() or {})["components"][REPLICATOR]
        assert is_running(info["pid"], info["argv"])
        self.group = info["pid"]  # started in a session of its own: its process group
        self.stopped = False

    def signal(self, sig: int) -> None:
        os.killpg(self.group, sig)
        self.stopped = sig == signal.SIGSTOP

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        super().before_flip(k, ctx)
        self.signal(signal.SIGSTOP)
        produced = ctx.tally.counts()[0]
        wait_for(lambda: ctx.tally.counts()[0] >= produced + UNCOPIED, 60, f"{UNCOPIED} records produced uncopied")


def test_a_flip_while_replication_to_the_standby_stands_still(refcluster: RefCluster) -> None:
    if REPLICATOR not in refcluster.replicators:
        pytest.skip("the lite replicator is stopped; MirrorMaker 2 is tested through its anchors")
    workload = ReplicationStalls(refcluster)
    try:
        report = run_drill(
            refcluster, DrillOptions(messages=4000, switches=1, consumers=2, kill_primary=True, timeout_s=240), workload
        )
    finally:
        if workload.stopped:
            workload.signal(signal.SIGCONT)
    assert (report.lost, report.duplicated) == (0, 0), report
    assert report.resent >= UNCOPIED, f"the replay window re-sent what was not copied: {report}"
