"""The in-memory adapter: see :mod:`hotstandby.adapter`.

The identity travels as a record header holding bytes, as with Kafka (``hs-id``). There is no
reference cluster to drill: the failover simulation (``tests/unit/test_failover_simulation.py``)
is this adapter's drill.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotstandby.adapters.memory import probe as memory_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

if TYPE_CHECKING:
    from hotstandby.drill.report import DrillReport
    from hotstandby.refcluster import RefCluster

__all__ = ["ADAPTER", "MemoryAdapter"]


class MemoryAdapter:
    kind = "memory"
    identity_key = HEADER  # a record header (bytes)

    def probe(self, host: str, port: int, timeout: float) -> str:
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

    def drill(self, rc: RefCluster, options: Any, progress: Callable[[Any], None] | None = None) -> DrillReport:
        raise NotImplementedError("the memory adapter has no reference cluster: its drill is the failover simulation")


ADAPTER = MemoryAdapter()
