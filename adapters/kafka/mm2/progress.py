"""MirrorMaker 2's replication progress, kept where Kafka Connect keeps it: on the target cluster,
topic ``mm2-offsets.<source>.internal``, in Connect's JSON source-offset format::

    key   ["MirrorSourceConnector", {"cluster": "kafka-a", "partition": 0, "topic": "orders"}]
    value {"offset": 41}          # the last upstream offset handled; resume at 42

A position is written only after the target acknowledged every record up to it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CONNECTOR", "decode_progress", "encode_progress"]

CONNECTOR = "MirrorSourceConnector"


def encode_progress(source_alias: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    key = json.dumps(
        [CONNECTOR, {"cluster": source_alias, "partition": partition, "topic": topic}], separators=(",", ":")
    )
    return key.encode(), json.dumps({"offset": offset}, separators=(",", ":")).encode()


def decode_progress(key: bytes, value: bytes | None, source_alias: str) -> tuple[tuple[str, int], int | None] | None:
    """``((topic, partition), offset)`` for a record of this flow; None for foreign records.
    A tombstone (no value) gives offset None."""
    try:
        name, where = json.loads(key)
    except (ValueError, TypeError):
        return None
    if name != CONNECTOR or not isinstance(where, dict) or where.get("cluster") != source_alias:
        return None
    tp = (str(where["topic"]), int(where["partition"]))
    if value is None:
        return tp, None
    doc: Any = json.loads(value)
    return tp, int(doc["offset"])
