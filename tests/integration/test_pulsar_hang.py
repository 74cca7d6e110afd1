"""The active Pulsar cluster hanging at a flip: its broker is stopped (SIGSTOP), so the kernel
still accepts connections on its port and nothing answers, what a partition looks like to a
client. The flip away from it completes in bounded time and the drill's producer and shared
consumers lose and duplicate nothing."""

from __future__ import annotations

from hotstandby.drill import DrillOptions
from hotstandby.drill.pulsar import PulsarWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.refcluster import RefCluster
from tests.integration.process_pause import Paused, resumed_after
from tests.support import capture_logs

DRAIN_S = 10.0  # hotstandby.drain.timeout.ms's default


class HangsAtTheFlip(PulsarWorkload):
    def __init__(self, broker: Paused) -> None:
        super().__init__(new_run_id())
        self.broker = broker

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        super().before_flip(k, ctx)
        self.broker.pause()


def test_a_flip_away_from_a_hung_pulsar_cluster(refcluster: RefCluster) -> None:
    with resumed_after(refcluster, "pulsar-a") as broker, capture_logs() as events:
        options = DrillOptions(messages=2000, switches=1, consumers=2, phase_s=3, settle_s=2, timeout_s=240)
        report = run_drill(refcluster, options, HangsAtTheFlip(broker))
    assert (report.lost, report.duplicated) == (0, 0), report
    switched = [e for e in events if e["event"] == "switch.completed"]
    print(
        f"[measure] flip away from a hung pulsar-a: switches {[e['duration_ms'] for e in switched]} ms, first "
        f"message on pulsar-b after {report.switches[0].latency_ms} ms, re-sent {report.resent}"
    )
    assert len({e["client"] for e in switched}) == len(switched) >= 2, f"each client switched once: {switched}"
    assert max(e["duration_ms"] for e in switched) < (DRAIN_S + 15) * 1000, switched
