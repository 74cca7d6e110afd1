"""The rows the source produces: Spark's Kafka source columns plus the failover columns, built
as Arrow record batches.

``key`` binary, ``value`` binary, ``topic`` string (the logical topic, also for a remote copy
such as ``kafka-a.orders``), ``partition`` int, ``offset`` long, ``timestamp`` timestamp,
``timestampType`` int, ``headers`` (with ``includeHeaders``) array of (key string, value
binary), then ``cluster`` string (where the record was read), ``route_epoch`` long (the
route's epoch the batch was planned at) and ``hs_id`` binary (the record identity; null for a
record without one).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["KAFKA_COLUMNS", "PULSAR_SCHEMA_DDL", "PulsarRows", "RowBuffer", "kafka_schema_ddl"]

#: Pulsar routes: the Pulsar connector's columns plus the failover columns.
PULSAR_SCHEMA_DDL = (
    "value binary, __key string, __topic string, __messageId binary, __publishTime timestamp, "
    "__eventTime timestamp, __messageProperties map<string, string>, cluster string, route_epoch long, hs_id binary"
)
_PULSAR_ARROW = pa.schema([
    pa.field("value", pa.binary()),
    pa.field("__key", pa.string()),
    pa.field("__topic", pa.string()),
    pa.field("__messageId", pa.binary()),
    pa.field("__publishTime", pa.timestamp("us", tz="UTC")),
    pa.field("__eventTime", pa.timestamp("us", tz="UTC")),
    pa.field("__messageProperties", pa.map_(pa.string(), pa.string())),
    pa.field("cluster", pa.string()),
    pa.field("route_epoch", pa.int64()),
    pa.field("hs_id", pa.binary()),
])  # fmt: skip

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
_FAILOVER_COLUMNS = ("cluster", "route_epoch", "hs_id")


def kafka_schema_ddl(include_headers: bool) -> str:
    headers = ", headers array<struct<key: string, value: binary>>" if include_headers else ""
    return (
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
        f"timestampType int{headers}, cluster string, route_epoch long, hs_id binary"
    )


def _arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),  # what Spark expects
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(header)))
    fields += [pa.field("cluster", pa.string()), pa.field("route_epoch", pa.int64()), pa.field("hs_id", pa.binary())]
    return pa.schema(fields)


class RowBuffer:
    """Columns of rows read so far; :meth:`flush` turns them into one record batch."""

    def __init__(self, *, include_headers: bool, cluster: str, epoch: int) -> None:
        self._schema = _arrow_schema(include_headers)
        self._headers = include_headers
        self._cluster = cluster
        self._epoch = epoch
        self._columns: list[list[Any]] = [[] for _ in range(len(KAFKA_COLUMNS) + 1 + int(include_headers))]

    def __len__(self) -> int:
        return len(self._columns[0])

    def add(
        self,
        key: bytes | None,
        value: bytes | None,
        topic: str,
        partition: int,
        offset: int,
        timestamp: tuple[int, int],
        headers: list[tuple[str, bytes | None]] | None,
        hs_id: bytes | None,
    ) -> None:
        cols = self._columns
        cols[0].append(key)
        cols[1].append(value)
        cols[2].append(topic)
        cols[3].append(partition)
        cols[4].append(offset)
        kind, ts = timestamp
        cols[5].append(ts * 1000 if kind else None)  # ms -> us; TIMESTAMP_NOT_AVAILABLE is 0
        cols[6].append(max(kind - 1, 0))  # Spark: 0 CreateTime, 1 LogAppendTime
        if self._headers:
            cols[7].append([{"key": k, "value": v} for k, v in headers or ()])
        cols[-1].append(hs_id)

    def flush(self) -> pa.RecordBatch:
        size = len(self)
        arrays = [pa.array(col, type=self._schema.field(i).type) for i, col in enumerate(self._columns[:-1])]
        arrays.append(pa.array([self._cluster] * size, type=pa.string()))
        arrays.append(pa.array([self._epoch] * size, type=pa.int64()))
        arrays.append(pa.array(self._columns[-1], type=pa.binary()))
        self._columns = [[] for _ in self._columns]
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)


class PulsarRows:
    """Rows of Pulsar messages (``__topic`` the logical topic) into record batches."""

    def __init__(self, *, cluster: str, epoch: int) -> None:
        self._cluster = cluster
        self._epoch = epoch
        self._columns: list[list[Any]] = [[] for _ in range(7)]
        self._ids: list[bytes | None] = []

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, value: bytes, key: str | None, topic: str, message_id: bytes, publish_ms: int, event_ms: int,
            properties: dict[str, str], hs_id: bytes | None) -> None:  # fmt: skip
        cols = self._columns
        cols[0].append(value)
        cols[1].append(key or None)
        cols[2].append(topic)
        cols[3].append(message_id)
        cols[4].append(publish_ms * 1000 if publish_ms else None)  # ms -> us; 0: not set
        cols[5].append(event_ms * 1000 if event_ms else None)
        cols[6].append(list(properties.items()))
        self._ids.append(hs_id)

    def flush(self) -> pa.RecordBatch:
        size = len(self)
        arrays = [pa.array(col, type=_PULSAR_ARROW.field(i).type) for i, col in enumerate(self._columns)]
        arrays.append(pa.array([self._cluster] * size, type=pa.string()))
        arrays.append(pa.array([self._epoch] * size, type=pa.int64()))
        arrays.append(pa.array(self._ids, type=pa.binary()))
        self._columns = [[] for _ in self._columns]
        self._ids = []
        return pa.RecordBatch.from_arrays(arrays, schema=_PULSAR_ARROW)
