"""The adapter contract for Kafka, on the reference cluster."""

from __future__ import annotations

from tests.contract.adapter import AdapterContract


class TestKafkaAdapter(AdapterContract):
    kind = "kafka"
    cluster = "kafka-a"
