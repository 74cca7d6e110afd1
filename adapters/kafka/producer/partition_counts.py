"""How many partitions a topic has, as the producer must know to choose one itself.

Apache Kafka creates a topic asynchronously: right after ``CreateTopics`` (or while a broker
auto-creates it) a metadata request may still say the topic does not exist, or has no leader
yet. librdkafka's own producer therefore waits ``topic.metadata.propagation.max.ms`` (30 s by
default) before it takes a topic for missing; the SDK does the same, asking again within one
``produce`` for up to :data:`METADATA_TIMEOUT_S` and signalling back-pressure
(``BufferError``, as for a full queue) while the propagation time has not run out.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from hotstandby.configcenter.polling import wait_until

__all__ = ["METADATA_TIMEOUT_S", "PartitionCounts"]

METADATA_TIMEOUT_S = 10.0
_NOT_YET = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE})
# The cluster does not answer: slow, restarting, or down until the route flips away from it.
_UNANSWERED = frozenset({KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})


class PartitionCounts:
    """Partition counts per topic, each looked up once."""

    def __init__(self, propagation_ms: int = 30_000) -> None:
        self._propagation_s = propagation_ms / 1000.0
        self._counts: dict[str, int] = {}
        self._missing_since: dict[str, float] = {}

    def get(self, inner: Any, topic: str) -> int:
        """The partition count of ``topic`` as ``inner`` (a librdkafka handle) sees it."""
        count = self._counts.get(topic)
        if count is not None:
            return count
        found: list[int] = []
        error: list[KafkaError] = []

        def known() -> bool:
            try:
                metadata = inner.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
            except KafkaException as exc:
                if exc.args and exc.args[0].code() in _UNANSWERED:
                    # Back-pressure, as when the queue is full: raw librdkafka would queue the
                    # record until the cluster answers, and a flip moves this producer on.
                    raise BufferError(f"partition count of {topic!r} not known yet: {exc}") from None
                raise
            if metadata is not None and metadata.error is None and metadata.partitions:
                found.append(len(metadata.partitions))
                return True
            error[:] = [metadata.error if metadata is not None and metadata.error else
                        KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)]  # fmt: skip
            if error[0].code() not in _NOT_YET:
                raise KafkaException(error[0])
            return False

        since = self._missing_since.setdefault(topic, time.monotonic())
        left = since + self._propagation_s - time.monotonic()
        if wait_until(known, max(0.0, min(left, METADATA_TIMEOUT_S)), first=0.02, most=0.5):
            self._missing_since.pop(topic, None)
            count = self._counts[topic] = found[0]
            return count
        if time.monotonic() < since + self._propagation_s:
            raise BufferError(f"topic {topic!r} not known to the cluster yet: {error[0]}")
        self._missing_since.pop(topic, None)  # a later produce waits again, as librdkafka's does
        raise KafkaException(error[0])
