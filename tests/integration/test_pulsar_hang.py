"""The active Pulsar cluster hanging at a flip: its broker is stopped (SIGSTOP), so the kernel
still accepts connections on its port and nothing answers, what a partition looks like to a
client. The flip away from it completes in bounded time and the drill's producer and shared
consumers lose and duplicate nothing."""

from __future__ import annotations

import contextlib
import time
import uuid

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.drill import DrillOptions
from hotstandby.drill.pulsar import PulsarWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.refcluster import RefCluster
from tests.integration.process_pause import Paused, resumed_after
from tests.integration.pulsar_helpers import quiet, replicated, take
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


RECEIVE_MARGIN_S = 0.5  # what receive(timeout_millis) may take past its timeout (docs/guarantees.md)


def test_receive_keeps_its_timeout_while_the_cluster_hangs_and_through_the_flip_away(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"persistent://public/default/hang-{uuid.uuid4().hex[:8]}"
    replicated(refcluster, topic)
    client = Client("payments", etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                    operation_timeout_seconds=10, logger=quiet())  # fmt: skip
    longest: dict[str, float] = {}

    def receive(phase: str) -> None:
        started = time.monotonic()
        with contextlib.suppress(pulsar.Timeout):
            consumer.acknowledge(consumer.receive(timeout_millis=100))
        longest[phase] = max(longest.get(phase, 0.0), time.monotonic() - started)

    try:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
        producer = client.create_producer(topic)
        for i in range(20):
            producer.send(f"m{i}".encode())
        for msg in take(consumer, 20):
            consumer.acknowledge(msg)
        with resumed_after(refcluster, "pulsar-a") as broker:
            broker.pause()
            for _ in range(10):
                receive("hung")
            center.switch("payments", "pulsar-b", reason="pulsar-a hangs")
            deadline = time.monotonic() + 60
            while client.cluster != "pulsar-b":
                assert time.monotonic() < deadline, "the client on pulsar-b within 60 s"
                receive("switching")
        receive("after")
    finally:
        client.close()
    print(f"[measure] receive(timeout_millis=100), longest (s): { {k: round(v, 3) for k, v in longest.items()} }")
    assert all(took < 0.1 + RECEIVE_MARGIN_S for took in longest.values()), longest
