"""The Kafka adapter (confluent-kafka): see :mod:`hotstandby.adapter`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotstandby.adapters.kafka import probe as kafka_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

if TYPE_CHECKING:
    from hotstandby.drill.report import DrillReport
    from hotstandby.refcluster import RefCluster

__all__ = ["ADAPTER", "KafkaAdapter"]


class KafkaAdapter:
    kind = "kafka"
    identity_key = HEADER  # a record header; Kafka headers carry bytes

    def probe(self, host: str, port: int, timeout: float) -> str:
        summary: str = kafka_probe.probe(host, port, timeout)
        return summary

    def encode_identity(self, rid: RecordId) -> bytes:
        return rid.encode()

    def decode_identity(self, raw: bytes | str) -> RecordId:
        if isinstance(raw, str):
            raise FormatError("hs-id: a Kafka header carries bytes, got text")
        return RecordId.decode(raw)

    def clients(self) -> dict[str, type]:
        from hotstandby.adapters.kafka.consumer import Consumer
        from hotstandby.adapters.kafka.producer import Producer

        return {"Producer": Producer, "Consumer": Consumer}

    def drill(self, rc: RefCluster, options: Any, progress: Callable[[Any], None] | None = None) -> DrillReport:
        from hotstandby.drill.kafka import run_kafka_drill

        return run_kafka_drill(rc, options, progress)


ADAPTER = KafkaAdapter()
