"""Partitions lost to ``max.poll.interval.ms``, side by side with confluent-kafka's consumer on
the same broker: ``poll`` returns the ``_MAX_POLL_EXCEEDED`` error first, and the loss queued
behind it reaches the application's ``on_revoke`` (no ``on_lost`` given) at the next ``poll``."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, TopicPartition

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config

pytestmark = [pytest.mark.apache, pytest.mark.real_tier_only]  # ten seconds of a consumer left idle

_MAX_POLL_S = 6.5


def lose_partitions(make: Callable[[dict[str, Any]], Any], topic: str) -> list[str]:
    """What the application sees, in order: ``assign``/``revoke`` calls and ``poll`` results."""
    seen: list[str] = []
    consumer = make({"group.id": f"lost-{uuid.uuid4().hex[:8]}", "partition.assignment.strategy": "cooperative-sticky",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", "heartbeat.interval.ms": 2000,
                     "session.timeout.ms": 6000, "max.poll.interval.ms": int(_MAX_POLL_S * 1000)})  # fmt: skip

    def told(what: str) -> Callable[[Any, list[TopicPartition]], None]:
        return lambda _consumer, partitions: seen.append(f"{what} {len(partitions)}")

    try:
        consumer.subscribe([topic], on_assign=told("assign"), on_revoke=told("revoke"))
        deadline = time.monotonic() + 60
        while (msg := consumer.poll(0.5)) is None or msg.error() is not None:
            assert time.monotonic() < deadline, "no record within 60 s"
        seen.append(f"record {msg.value()!r}")
        # Not polling for longer than max.poll.interval.ms is what loses the partitions.
        time.sleep(_MAX_POLL_S + 1.5)
        for _ in range(2):
            msg = consumer.poll(1)
            error = None if msg is None else msg.error()
            seen.append("poll: nothing" if msg is None else f"poll: {error.code() if error else msg.value()!r}")
    finally:
        consumer.close()
    return seen


def test_the_error_comes_first_and_the_loss_at_the_next_poll_as_with_confluent_kafka(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"lost-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    produce_values(refcluster, namespace, topic, ["a"])
    spec = refcluster.cluster_spec("kafka-a")
    raw_conf = spec.client_config("app")
    makers: dict[str, Callable[[dict[str, Any]], Any]] = {
        "raw": lambda conf: confluent_kafka.Consumer({"bootstrap.servers": spec.url, **raw_conf, **conf}),
        "facade": lambda conf: Consumer(route_config(refcluster, namespace, **conf)),
    }
    seen: dict[str, list[str]] = {}
    # Both at once: each waits out its max.poll.interval.ms.
    threads = [threading.Thread(target=lambda n=name, m=make: seen.__setitem__(n, lose_partitions(m, topic)))
               for name, make in makers.items()]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    # After the revoke, the second poll joins again (and may get the record again): timing.
    expected = ["assign 1", "record b'a'", f"poll: {KafkaError._MAX_POLL_EXCEEDED}", "revoke 1"]
    assert seen.get("raw", [])[:4] == expected, f"confluent-kafka's own order on this broker: {seen.get('raw')}"
    assert seen.get("facade", [])[:4] == expected, f"{seen.get('facade')}"
