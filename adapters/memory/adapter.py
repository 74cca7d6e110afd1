"""The in-memory adapter: see :mod:`hotstandby.adapter`.

The identity travels as a record header holding bytes, as with Kafka (``hs-id``). Clusters are
addressed as ``host:port`` names the in-memory world registered; nothing goes over a network.
There is no reference cluster to drill: the failover simulation
(``tests/unit/test_failover_simulation.py``) is this adapter's drill.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from hotstandby.adapter import TlsSettings, host_ports
from hotstandby.adapters.memory import probe as memory_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["ADAPTER", "MemoryAdapter"]


class MemoryAdapter:
    kind = "memory"
    url_field = "bootstrap.servers"
    url_form = "host:port (a name the in-memory world registered)"
    cluster_keys = ("bootstrap.servers",)
    default_partitioner = "murmur2"
    identity_key = HEADER  # a record header (bytes)

    def endpoints(self, url: str) -> list[tuple[str, int]]:
        return host_ports(url)

    def uses_tls(self, url: str, client: Mapping[str, Any]) -> bool:
        return False  # nothing travels over a network

    def tls_settings(self, client: Mapping[str, Any]) -> TlsSettings:
        return TlsSettings(cafile=None, verify=False, check_hostname=False)

    def probe(self, host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
        summary: str = memory_probe.probe(host, port, timeout)
        return summary

    def encode_identity(self, rid: RecordId) -> bytes:
        return rid.encode()

    def decode_identity(self, raw: bytes | str) -> RecordId:
        if not isinstance(raw, bytes):
            raise FormatError("hs-id: a header carries bytes, got text")
        rid: RecordId = RecordId.decode(raw)
        return rid

    def clients(self) -> dict[str, type]:
        from hotstandby.adapters.memory.consumer import Consumer
        from hotstandby.adapters.memory.producer import Producer

        return {"Consumer": Consumer, "Producer": Producer}


ADAPTER = MemoryAdapter()
