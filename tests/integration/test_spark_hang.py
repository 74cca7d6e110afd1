"""The Spark source's route flipping away from a Kafka cluster that hangs: kafka-a is stopped
(SIGSTOP: connections accepted, nothing answered) just before the flip. The streaming query
of the drill follows the flip in bounded time and reads every record once."""

from __future__ import annotations

import pytest

from hotstandby.drill import DrillOptions
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.drill.spark import PHASE_S, SparkWorkload
from hotstandby.refcluster import RefCluster
from tests.integration.process_pause import Paused, resumed_after


class HangsAtTheFlip(SparkWorkload):
    """The Spark drill's workload; kafka-a hangs at the flip (and the driver is not killed)."""

    def __init__(self, broker: Paused) -> None:
        super().__init__(new_run_id())
        self.broker = broker

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        self.broker.pause()


def test_a_spark_query_flips_away_from_a_hung_kafka_cluster(refcluster: RefCluster) -> None:
    pytest.importorskip("pyspark")
    options = DrillOptions(messages=1000, switches=1, rate=300, timeout_s=300, consumers=1, phase_s=PHASE_S,
                           lockstep=True)  # fmt: skip
    with resumed_after(refcluster, "kafka-a") as broker:
        report = run_drill(refcluster, options, HangsAtTheFlip(broker))
    assert (report.produced, report.consumed) == (1000, 1000), report
    assert (report.lost, report.duplicated) == (0, 0), report
    latency = report.switches[0].latency_ms
    print(f"[measure] Spark query, flip away from a hung kafka-a: first row from kafka-b after {latency} ms")
    assert latency is not None and latency < 60_000, f"the query read on kafka-b {latency} ms after the flip"
