"""What a sink task reports to the driver, and the column values it writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import WriterCommitMessage

__all__ = ["TaskWrite", "as_bytes"]


@dataclass
class TaskWrite(WriterCommitMessage):
    """One task's write: rows acknowledged, the cluster it ended on, what a switch re-sent."""

    rows: int
    cluster: str
    resent: int = 0
    switches: int = 0


def as_bytes(value: Any) -> bytes | None:
    """A ``key`` / ``value`` cell (binary or string, as Spark's Kafka sink takes) as bytes."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"expected a binary or string column, got {type(value).__name__}")
