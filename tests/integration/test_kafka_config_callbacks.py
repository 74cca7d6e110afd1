"""confluent-kafka's configuration callbacks (``on_delivery``, ``delivery.report.only.error``,
``stats_cb``, ``logger``) work through the Kafka facades as through confluent-kafka."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config


class Calls(list[Any]):
    """A callback that remembers its calls."""

    def __call__(self, *args: Any) -> None:
        self.append(args)


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def captured_logger(name: str) -> tuple[logging.Logger, Captured]:
    logger = logging.getLogger(f"test-{name}-{uuid.uuid4().hex[:6]}")
    handler = Captured()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger, handler


def serve_until(client: Any, condition: Any, timeout: float = 20.0) -> None:
    """Call ``client.poll`` until ``condition()`` holds (callbacks are served by poll)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the callback was not called in time"
        client.poll(0.1)


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    name = f"cb-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), name, 1)
    return name


def test_config_on_delivery_reports_every_record_without_its_own_callback(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str
) -> None:
    default, own = Calls(), Calls()
    logger, logs = captured_logger("producer")
    stats = Calls()
    producer = Producer(
        route_config(
            refcluster,
            namespace,
            on_delivery=default,
            stats_cb=stats,
            **{"statistics.interval.ms": 100, "debug": "msg"},
        ),
        logger=logger,  # a keyword, as confluent-kafka takes it
    )
    try:
        for i in range(5):
            producer.produce(topic, value=f"v{i}")
        producer.produce(topic, value=b"own", on_delivery=own)
        assert producer.flush(30) == 0
        serve_until(producer, lambda: stats and logs.records)
    finally:
        producer.close()
    assert sorted(m.value() for err, m in default if err is None) == [f"v{i}".encode() for i in range(5)]
    assert [m.value() for err, m in own if err is None] == [b"own"], "a per-record callback replaces the default"
    assert json.loads(stats[0][0])["type"] == "producer"
    assert any("produce" in r.getMessage().lower() for r in logs.records), "librdkafka's msg debug lines"


def test_delivery_report_only_error_suppresses_successes(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str
) -> None:
    reports = Calls()
    producer = Producer(route_config(refcluster, namespace, on_delivery=reports,
                                     **{"delivery.report.only.error": True}))  # fmt: skip
    try:
        for i in range(5):
            producer.produce(topic, value=f"v{i}")
        assert producer.flush(30) == 0, "the SDK still learns of every delivery"
    finally:
        producer.close()
    assert reports == []
    with pytest.raises(KafkaException) as refused:
        Producer(route_config(refcluster, namespace, on_delivery="not callable"))
    assert refused.value.args[0].code() == KafkaError._INVALID_ARG


def test_consumer_config_callbacks_reach_confluent_kafka(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, topic: str
) -> None:
    stats, errors = Calls(), Calls()
    logger, logs = captured_logger("consumer")
    consumer = Consumer(
        route_config(refcluster, namespace, stats_cb=stats, error_cb=errors, logger=logger,
                     **{"group.id": f"g-{uuid.uuid4().hex[:6]}", "statistics.interval.ms": 100, "debug": "consumer"})
    )  # fmt: skip
    try:
        consumer.subscribe([topic])
        serve_until(consumer, lambda: stats and logs.records)
    finally:
        consumer.close()
    assert json.loads(stats[0][0])["type"] == "consumer"
    assert logs.records, "librdkafka's consumer debug lines reach the logger"
