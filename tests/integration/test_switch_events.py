"""``hotstandby.on_switch`` and the metrics of a Kafka producer moved by a route flip, on the
reference cluster."""

from __future__ import annotations

import threading
import uuid

import pytest

from hotstandby import SwitchEvent, SwitchPhase, metrics
from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.polling import wait_until
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def test_a_flip_under_a_kafka_producer_reports_started_then_completed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"ev-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    events: list[SwitchEvent] = []
    threads: set[str] = set()
    lock = threading.Lock()

    def on_switch(event: SwitchEvent) -> None:
        with lock:
            events.append(event)
            threads.add(threading.current_thread().name)

    def phases() -> list[SwitchPhase]:
        with lock:
            return [e.phase for e in events]

    before = metrics.snapshot()
    client_id = f"p-ev-{uuid.uuid4().hex[:6]}"
    config = route_config(refcluster, namespace, **{"hotstandby.on_switch": on_switch, "hotstandby.client.id": client_id,
                                                     "hotstandby.drain.timeout.ms": 1000})  # fmt: skip
    producer = Producer(config)
    try:
        for i in range(3):
            producer.produce(topic, value=f"v{i}")
        assert producer.flush(10) == 0
        flipped = center.switch("orders", "kafka-b", reason="on_switch test")
        assert wait_until(lambda: len(phases()) >= 2, 15, most=0.1), f"events: {phases()}"
        started, completed = events[:2]
        assert phases() == [SwitchPhase.STARTED, SwitchPhase.COMPLETED]
        for event in (started, completed):
            assert (event.route, event.client_id, event.role) == ("orders", client_id, "producer")
            assert (event.from_cluster, event.to_cluster) == ("kafka-a", "kafka-b")
            assert (event.from_epoch, event.to_epoch) == (flipped.epoch - 1, flipped.epoch)
        assert completed.duration_s is not None and 0 < completed.duration_s < 15
        assert completed.resent == producer.resent, "what this (only) switch re-sent"
        assert threads == {f"hotstandby-events-{client_id}"}
        now = metrics.snapshot()
        assert now["hotstandby_client_cluster"].value(client=client_id, cluster="kafka-b") == 1
        assert now["hotstandby_client_epoch"].value(client=client_id) == flipped.epoch
    finally:
        producer.close()
    after = metrics.snapshot()
    switches = "hotstandby_switches_total"
    for phase in ("started", "completed"):
        grew = after[switches].value(route="orders", phase=phase) - before[switches].value(route="orders", phase=phase)
        assert grew == 1, phase
    duration = "hotstandby_switch_duration_seconds"
    assert after[duration].count(route="orders") - before[duration].count(route="orders") == 1
    assert after["hotstandby_client_cluster"].matching(client=client_id) == []
