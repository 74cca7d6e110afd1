"""The active Kafka cluster hanging: its broker accepts connections and never answers (a fault
relay in front of it stalls, what a partition looks like to a client).

* A flip away from it completes in bounded time (the drain gives up on the hung cluster), and
  the drill's producer and consumers lose and duplicate nothing.
* With no flip, no call blocks past its own timeout and the producer reports what the raw
  client reports; the SRE's flip then delivers everything that was not delivered.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from typing import TypeVar

import pytest
from confluent_kafka import KafkaError, Message

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.drill import DrillOptions
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.runner import DrillContext, new_run_id, run_drill
from hotstandby.refcluster import Ports, RefCluster
from tests.fault_relay import FaultRelay, Mode
from tests.integration.kafka_helpers import create_topic, route_config
from tests.support import capture_logs, wait_for

T = TypeVar("T")

DRAIN_S = 10.0  # hotstandby.drain.timeout.ms's default
POLL_MARGIN_S = 0.5  # what a poll may take past its timeout during a switch (docs/guarantees.md)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def relays(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RefCluster, dict[str, FaultRelay]]]:
    """A lite reference cluster whose Kafka brokers sit behind relays: each listens on a port
    of its own and advertises its registered one, where the relay listens."""
    ports, inner = Ports.free(), {"kafka-a": free_port(), "kafka-b": free_port()}
    with ExitStack() as stack:
        relays = {name: stack.enter_context(FaultRelay(("127.0.0.1", port), port=ports.of(name)))
                  for name, port in inner.items()}  # fmt: skip
        rc = RefCluster(tmp_path_factory.mktemp("relayed"), ports, listen=inner)
        stack.callback(rc.down)
        rc.up()
        yield rc, relays


class HangsAtTheFlip(KafkaWorkload):
    """The Kafka drill's workload; kafka-a stalls just before the flip away from it."""

    def __init__(self, relay: FaultRelay) -> None:
        super().__init__(new_run_id())
        self.relay = relay

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        super().before_flip(k, ctx)
        self.relay.set(Mode.STALL)


def test_a_flip_away_from_a_hung_kafka_cluster(relays: tuple[RefCluster, dict[str, FaultRelay]]) -> None:
    rc, relay = relays
    assert rc.cluster_spec("kafka-a").url.endswith(f":{relay['kafka-a'].port}"), "clients go through the relay"
    workload = HangsAtTheFlip(relay["kafka-a"])
    try:
        with capture_logs() as events:
            report = run_drill(
                rc, DrillOptions(messages=2000, switches=1, consumers=2, phase_s=3, settle_s=2, timeout_s=240), workload
            )
    finally:
        relay["kafka-a"].set(Mode.PASS)
    assert relay["kafka-a"].accepted > 0
    assert (report.lost, report.duplicated) == (0, 0), report
    switched = [e for e in events if e["event"] == "switch.completed"]
    print(
        f"[measure] flip away from a hung kafka-a: switches {[e['duration_ms'] for e in switched]} ms, first record "
        f"on kafka-b after {report.switches[0].latency_ms} ms, re-sent {report.resent}, filtered {report.filtered}"
    )
    assert len(switched) == 3, f"the producer and both consumers switched once: {switched}"
    # Bounded: the drain gives up on its timeout, and the rest is the new cluster's start.
    assert max(e["duration_ms"] for e in switched) < (DRAIN_S + 15) * 1000, switched
    assert report.switches[0].latency_ms is not None


def test_a_hang_without_a_flip_blocks_no_call_and_the_flip_delivers_the_rest(
    relays: tuple[RefCluster, dict[str, FaultRelay]],
) -> None:
    rc, relay = relays
    namespace = f"/hs-hang-{uuid.uuid4().hex[:8]}"
    rc.register(namespace)
    topic = f"hang-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(rc.cluster_spec(cluster), topic, 2)
    reports: list[tuple[str, KafkaError | None]] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        reports.append((msg.value().decode(), err))

    producer = Producer(route_config(rc, namespace, **{"hotstandby.client.id": "hang-p", "on_delivery": delivered}))
    short = Producer(route_config(rc, namespace, **{"hotstandby.client.id": "hang-short", "message.timeout.ms": 2000}))
    consumer = Consumer(route_config(rc, namespace, **{"group.id": f"g-{topic}", "hotstandby.client.id": "hang-c"}))
    got: list[str] = []
    longest: dict[str, float] = {}

    def timed(name: str, call: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return call()
        finally:
            longest[name] = max(longest.get(name, 0.0), time.monotonic() - started)

    def poll_once() -> int:
        """Records received so far, after one poll."""
        msg = timed("poll", lambda: consumer.poll(0.1))
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
        return len(got)

    def consume_once() -> int:
        """Records received so far, after one consume(10, 0.1)."""
        got.extend(m.value().decode() for m in timed("consume", lambda: consumer.consume(10, 0.1)) if m.error() is None)
        return len(got)

    try:
        consumer.subscribe([topic])
        for i in range(50):
            producer.produce(topic, value=f"r{i}".encode(), partition=i % 2)
        assert producer.flush(30) == 0
        wait_for(lambda: poll_once() >= 50, 60, "the first 50 records")

        relay["kafka-a"].set(Mode.STALL)
        for i in range(50, 250):
            timed("produce", lambda i=i: producer.produce(topic, value=f"r{i}".encode(), partition=i % 2))
        left = timed("flush", lambda: producer.flush(3))
        assert left > 0, "kafka-a answers nothing: records stay queued, as with the raw client"
        failed: list[KafkaError | None] = []
        short.produce(topic, value=b"short", partition=0, on_delivery=lambda err, _msg: failed.append(err))
        wait_for(lambda: timed("poll (producer)", lambda: short.poll(0.1)) >= 0 and failed, 30, "a delivery report")
        assert failed[0] is not None and failed[0].code() == KafkaError._MSG_TIMED_OUT, failed
        for _ in range(20):
            poll_once()
        assert len(got) == 50, "nothing more comes from a hung cluster"

        with ConfigCenter.open(replace(rc.settings(), namespace=namespace)) as center:
            assert center.switch("orders", "kafka-b", reason="kafka-a hangs").active == "kafka-b"
        # The application polls through the switch: no poll waits for the hung cluster.
        longest.pop("poll")
        wait_for(lambda: poll_once() + consume_once() >= 0 and consumer.cluster == "kafka-b", 60,
                 "the consumer on kafka-b")  # fmt: skip
        during = longest.pop("poll")
        consume_during = longest.pop("consume")
        assert producer.flush(60) == 0, "the flip delivers what the hang held"
        wait_for(lambda: poll_once() >= 250, 90, "every record, after the flip")
    finally:
        relay["kafka-a"].set(Mode.PASS)
        for client in (consumer, producer, short):
            client.close()
    assert sorted(got) == sorted(f"r{i}" for i in range(250)), "lost or duplicated"
    assert all(err is None for _, err in reports) and len(reports) == 250, "each record delivered once"
    print(
        f"[measure] kafka-a hung, no flip: longest calls (s) { {k: round(v, 3) for k, v in longest.items()} }; "
        f"poll(0.1) and consume(10, 0.1) during the switch away from it: {during:.3f} s, {consume_during:.3f} s"
    )
    assert during < 0.1 + POLL_MARGIN_S, f"poll(0.1) took {during:.3f} s during the switch"
    assert consume_during < 0.1 + POLL_MARGIN_S, f"consume(10, 0.1) took {consume_during:.3f} s during the switch"
    assert longest["produce"] < 1.0 and longest["poll"] < 1.0 and longest["poll (producer)"] < 1.0, longest
    assert longest["flush"] < 3.5, longest
