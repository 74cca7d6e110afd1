"""Reading one partition from its beginning to its end: how the client and the reference
replicator read MirrorMaker 2's internal topics (offset syncs, checkpoints, progress)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka.client_logs import with_logger

__all__ = ["read_every_partition", "read_to_end"]


def read_to_end(config: dict[str, Any], topic: str, partition: int = 0, *, timeout: float = 30.0) -> list[Message]:
    """Every record of one partition, from the beginning to the high watermark seen at the start.

    Raises :class:`~confluent_kafka.KafkaException` for an error the broker reports (as the
    raw client does) and :class:`TimeoutError` when the end is not reached within ``timeout`` s.
    """
    consumer = Consumer(with_logger({**config, "enable.auto.commit": False, "enable.partition.eof": True}))
    try:
        deadline = time.monotonic() + timeout
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        if high <= low:
            return []
        return _read_until(consumer, topic, {partition: high}, deadline)
    except TimeoutError:
        raise TimeoutError(f"reading {topic}[{partition}] to offset {high} took more than {timeout} s") from None
    finally:
        consumer.close()


def read_every_partition(config: dict[str, Any], topic: str, *, timeout: float = 30.0) -> list[Message]:
    """Every record of every partition of ``topic`` up to the high watermarks seen at the start,
    each partition's in order (Kafka Connect's offsets topic has 25 partitions, its records
    spread by key). Raises as :func:`read_to_end`; an unknown topic gives no record."""
    consumer = Consumer(with_logger({**config, "enable.auto.commit": False, "enable.partition.eof": True}))
    try:
        deadline = time.monotonic() + timeout
        metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        highs = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            if high > low:
                highs[partition] = high
        if not highs:
            return []
        return _read_until(consumer, topic, highs, deadline)
    except TimeoutError:
        raise TimeoutError(f"reading {topic} to its end offsets took more than {timeout} s") from None
    finally:
        consumer.close()


def _read_until(consumer: Consumer, topic: str, highs: dict[int, int], deadline: float) -> list[Message]:
    """Read the partitions of ``highs`` from their beginnings to those offsets (each in order)."""
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in highs])
    out: list[Message] = []
    left = dict(highs)
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(err)
        out.append(msg)
        partition, offset = msg.partition(), msg.offset()
        if partition in left and offset is not None and offset >= left[partition] - 1:
            del left[partition]
            if not left:
                return out
    raise TimeoutError
