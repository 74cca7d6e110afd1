"""The Kafka adapter (confluent-kafka): see :mod:`hotstandby.adapter`."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from hotstandby.adapter import TlsSettings, flag, host_ports
from hotstandby.adapters.kafka.wire import probe as kafka_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["ADAPTER", "KafkaAdapter"]


def _text(value: Any) -> str | None:
    return str(value) if value else None


class KafkaAdapter:
    kind = "kafka"
    url_field = "bootstrap.servers"
    url_form = "host:port[,host:port]"
    cluster_keys = ("bootstrap.servers", "metadata.broker.list")
    default_partitioner = "murmur2"  # the Java client's keyed partitioner (librdkafka's murmur2_random)
    identity_key = HEADER  # a record header; Kafka headers carry bytes

    def endpoints(self, url: str) -> list[tuple[str, int]]:
        return host_ports(url)

    def uses_tls(self, url: str, client: Mapping[str, Any]) -> bool:
        return str(client.get("security.protocol", "plaintext")).lower() in ("ssl", "sasl_ssl")

    def tls_settings(self, client: Mapping[str, Any]) -> TlsSettings:
        # librdkafka's defaults: verify the certificate, and the host name (algorithm https).
        algorithm = client.get("ssl.endpoint.identification.algorithm", "https")
        ca = client.get("ssl.ca.location")
        return TlsSettings(
            cafile=str(ca) if ca and ca != "probe" else None,  # "probe": the system's CAs
            verify=flag(client.get("enable.ssl.certificate.verification", True)),
            check_hostname=flag(algorithm) or str(algorithm).strip().lower() == "https",
            certfile=_text(client.get("ssl.certificate.location")),
            keyfile=_text(client.get("ssl.key.location")),
            password=_text(client.get("ssl.key.password")),
            cafile_setting="ssl.ca.location",
        )

    def probe(self, host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
        return kafka_probe.probe(host, port, timeout, tls=tls)

    def encode_identity(self, rid: RecordId) -> bytes:
        return rid.encode()

    def decode_identity(self, raw: bytes | str) -> RecordId:
        if isinstance(raw, str):
            raise FormatError("hs-id: a Kafka header carries bytes, got text")
        return RecordId.decode(raw)

    def clients(self) -> dict[str, type]:
        # Imported on demand: they need confluent_kafka, this module does not.
        from hotstandby.adapters.kafka.consumer.consumer import Consumer
        from hotstandby.adapters.kafka.producer.producer import Producer

        return {"Producer": Producer, "Consumer": Consumer}


ADAPTER = KafkaAdapter()
