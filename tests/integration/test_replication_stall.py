"""Replication to the standby stalling, then a flip: the replicator copying kafka-a to kafka-b
is stopped (SIGSTOP: its connections stay open, nothing moves) while the drill's producer
goes on; then kafka-a is SIGKILLed (it comes back empty) and the route flips to kafka-b. What
replication had not copied is only in the producer's replay window, which re-sends it to
kafka-b; consumers lose and duplicate nothing, and replication goes on afterwards."""

from __future__ import annotations

import uuid

from hotstandby.drill import DrillOptions
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, producer, wait_copied
from tests.integration.process_pause import Paused, resumed_after
from tests.support import wait_for

REPLICATOR = "mirror-kafka-a-to-kafka-b"
UNCOPIED = 800  # records produced while replication stands still, before the flip


class ReplicationStalls(KafkaWorkload):
    def __init__(self, replicator: Paused) -> None:
        super().__init__(new_run_id())
        self.replicator = replicator

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        super().before_flip(k, ctx)
        self.replicator.pause()
        produced = ctx.tally.counts()[0]
        wait_for(lambda: ctx.tally.counts()[0] >= produced + UNCOPIED, 60, f"{UNCOPIED} records produced uncopied")


def test_a_flip_while_replication_to_the_standby_stands_still(refcluster: RefCluster) -> None:
    with resumed_after(refcluster, REPLICATOR) as replicator:
        options = DrillOptions(
            messages=3000, switches=1, consumers=2, kill_primary=True, phase_s=3, settle_s=2, timeout_s=240
        )
        report = run_drill(refcluster, options, ReplicationStalls(replicator))
    print(
        f"[measure] replication stopped, kafka-a killed, flip: re-sent {report.resent}, filtered {report.filtered}, "
        f"first record on kafka-b after {report.switches[0].latency_ms} ms"
    )
    assert (report.lost, report.duplicated) == (0, 0), report
    assert report.resent >= UNCOPIED, f"the replay window re-sent what was not copied: {report}"
    # The replicator goes on after it: its consumer of the source lived through kafka-a's death
    # while stopped, and closing that client once hung it for good.
    topic = f"after-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    sent = producer(refcluster.cluster_spec("kafka-a"))
    for i in range(20):
        sent.produce(topic, value=b"x", partition=i % 2)
    assert sent.flush(10) == 0
    wait_copied(refcluster, topic, 2, 20, timeout=60)
