"""A plain Python data source on the raw Kafka client, for ``bench/spark_reader.py``: the same
Arrow columns as Spark's Kafka source, one task per partition, assign and consume to the end
offset, no failover logic. A module of its own so Spark's Python workers import it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
])  # fmt: skip


def watermarks(servers: str, topic: str) -> dict[int, tuple[int, int]]:
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "__bench-plan"})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in sorted(parts)}
    finally:
        consumer.close()


def read(value: tuple[str, str, int, int, int]) -> Iterator[Any]:
    servers, topic, partition, start, end = value
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "__bench-read", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, partition, start)])
    cols: list[list[Any]] = [[] for _ in range(7)]
    at = start
    try:
        while at < end:
            for msg in consumer.consume(num_messages=8192, timeout=0.5):
                if msg.error() is not None:
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(str(msg.error()))
                    continue
                offset = msg.offset()
                if offset >= end:
                    at = end
                    break
                kind, ts = msg.timestamp()
                for col, v in zip(cols, (msg.key(), msg.value(), topic, partition, offset,
                                         ts * 1000 if kind else None, max(kind - 1, 0)), strict=True):  # fmt: skip
                    col.append(v)
                at = offset + 1
                if len(cols[0]) >= 8192:
                    yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA, strict=True)], schema=SCHEMA)  # fmt: skip
                    cols = [[] for _ in range(7)]
    finally:
        consumer.close()
    if cols[0]:
        yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA, strict=True)], schema=SCHEMA)  # fmt: skip


class RawBatch(DataSourceReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.servers, self.topic = options["servers"], options["topic"]

    def partitions(self) -> list[InputPartition]:
        marks = watermarks(self.servers, self.topic)
        return [InputPartition((self.servers, self.topic, p, lo, hi)) for p, (lo, hi) in marks.items() if hi > lo]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read(partition.value)


class RawStream(DataSourceStreamReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.servers, self.topic = options["servers"], options["topic"]

    def initialOffset(self) -> dict[str, int]:
        return {str(p): lo for p, (lo, _) in watermarks(self.servers, self.topic).items()}

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        return {str(p): hi for p, (_, hi) in watermarks(self.servers, self.topic).items()}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition((self.servers, self.topic, int(p), start.get(p, 0), hi))
                for p, hi in end.items() if hi > start.get(p, 0)]  # fmt: skip

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read(partition.value)


class RawKafka(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "rawkafka"

    def schema(self) -> str:
        return (
            "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
        )

    def reader(self, schema: Any) -> RawBatch:
        return RawBatch(dict(self.options))

    def streamReader(self, schema: Any) -> RawStream:
        return RawStream(dict(self.options))
