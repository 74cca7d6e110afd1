"""Reading with the Pulsar facade in tests: bounded waits, never a fixed sleep."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pulsar

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster


def take(consumer: object, count: int, timeout: float = 60.0) -> list[pulsar.Message]:
    """The next ``count`` messages handed out (fails after ``timeout``)."""
    got: list[pulsar.Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"{len(got)} of {count} messages within {timeout} s"
        try:
            got.append(consumer.receive(timeout_millis=int(min(left, 1.0) * 1000)))  # type: ignore[attr-defined]
        except pulsar.Timeout:
            continue
    return got


def nothing_more(consumer: object, within: float = 3.0) -> list[str]:
    """Values still handed out within ``within`` s (a bounded wait for an absence)."""
    extra: list[str] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            extra.append(consumer.receive(timeout_millis=200).data().decode())  # type: ignore[attr-defined]
        except pulsar.Timeout:
            continue
    return extra


def acknowledge_until(consumer: Any, wanted: set[str], timeout: float = 90.0) -> list[str]:
    """Receive and acknowledge until every value of ``wanted`` was handed out; all values seen."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not wanted <= set(got):
        assert time.monotonic() < deadline, f"never handed out: {sorted(wanted - set(got))[:10]}"
        try:
            msg = consumer.receive(timeout_millis=500)
        except pulsar.Timeout:
            continue
        got.append(msg.data().decode())
        consumer.acknowledge(msg)
    return got


def quiet() -> pulsar.ConsoleLogger:
    """pulsar-client's log: errors only."""
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def replicated(refcluster: RefCluster, *topics: str) -> None:
    """The reference replicators copy ``topics`` both ways (they read the topics registered in
    the reference cluster's own namespace)."""
    with ConfigCenter.open(replace(refcluster.settings())) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            for topic in topics:
                center.register_topic(cluster, topic)


ROUTE = "payments"  # the reference cluster's Pulsar route


def produce_values(client: Any, topic: str, values: list[str], **options: Any) -> None:
    """Send ``values`` to ``topic`` through a batching producer of ``client``, flushed and closed."""
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5)
    for v in values:
        producer.send_async(v.encode(), None, **options)
    producer.flush()
    producer.close()
