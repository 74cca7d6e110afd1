"""A flow's progress: the last source offset copied and acknowledged per partition, kept in
the target's progress topic (MM2's format, adapters/kafka/mm2/progress.py) so a restarted flow
resumes where it was, and so readers of the topic (the SDK's producer) see what was copied."""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from hotstandby.adapters.kafka.mm2.progress import decode_progress, encode_progress
from hotstandby.adapters.kafka.mm2.read_partition import read_to_end
from hotstandby.refcluster.replicators.kafka.config import FlowConfig
from hotstandby.refcluster.replicators.kafka.kafka_io import ReplicationError, close_consumer, flush

__all__ = ["TP", "ProgressLog"]

TP = tuple[str, int]
_FLUSH_TIMEOUT = 10.0
_WATERMARK_TIMEOUT = 5.0


class ProgressLog:
    def __init__(self, config: FlowConfig, stop: threading.Event) -> None:
        self._config = config
        self._stop = stop
        self.positions: dict[TP, int] = {}  # last upstream offset handled and acknowledged

    def load(self) -> None:
        """Read the progress topic to its end (a tombstone forgets a partition)."""
        target = {**self._config.target.consumer, "bootstrap.servers": self._config.target.bootstrap,
                  "group.id": "__hs-read"}  # fmt: skip
        for msg in read_to_end(target, self._config.progress_topic):
            decoded = decode_progress(msg.key() or b"", msg.value(), self._config.source.alias)
            if decoded is None:
                continue
            tp, offset = decoded
            if offset is None:
                self.positions.pop(tp, None)
            else:
                self.positions[tp] = offset

    def commit(self, producer: Producer, handled: dict[TP, int]) -> None:
        """Record ``handled`` once the target acknowledged it (raises ReplicationError if not)."""
        for (topic, partition), offset in handled.items():
            key, value = encode_progress(self._config.source.alias, topic, partition, offset)
            producer.produce(self._config.progress_topic, key=key, value=value, partition=0)
        if handled and flush(producer, _FLUSH_TIMEOUT, self._stop) > 0:
            raise ReplicationError("progress not acknowledged")
        self.positions.update(handled)

    def forget(self, producer: Producer, topic: str, partitions: int) -> None:
        """Start ``topic`` over: tombstones for its positions (readers of the position, like the
        SDK's producer, stop trusting them)."""
        for p in range(partitions):
            self.positions.pop((topic, p), None)
            key, _ = encode_progress(self._config.source.alias, topic, p, 0)
            producer.produce(self._config.progress_topic, key=key, value=None, partition=0)
        if flush(producer, _FLUSH_TIMEOUT, self._stop) > 0:
            raise ReplicationError("progress tombstones not acknowledged")

    def past_the_end(self, consumer_config: dict[str, object]) -> dict[str, int]:
        """Topics (with how many partitions to forget) whose position is past the source's end
        offset: from before the source came back empty (the reference broker would wait at it
        instead of reporting it out of range)."""
        probe = Consumer({**consumer_config, "group.id": "__hs-read"})
        try:
            stale: dict[str, int] = {}
            for (topic, partition), done in sorted(self.positions.items()):
                try:
                    _, high = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=_WATERMARK_TIMEOUT)
                except KafkaException:
                    continue  # gone or not answering: the refresh handles topics that are gone
                if done + 1 > high:
                    stale[topic] = max(stale.get(topic, 0), partition + 1)
            return stale
        finally:
            close_consumer(probe, "__hs-read")
