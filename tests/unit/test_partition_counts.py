"""The producer's partition counts: a topic Apache Kafka has not propagated yet is waited for,
as librdkafka's producer does (topic.metadata.propagation.max.ms), then taken for missing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka.producer.partition_counts import PartitionCounts


class Cluster:
    """A librdkafka handle's ``list_topics`` answering "unknown" ``unknown_for`` times first."""

    def __init__(self, unknown_for: int, partitions: int = 3, error: int = KafkaError.UNKNOWN_TOPIC_OR_PART) -> None:
        self.unknown_for, self.partitions, self.error, self.asked = unknown_for, partitions, error, 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.asked += 1
        if self.asked <= self.unknown_for:
            meta = SimpleNamespace(error=KafkaError(self.error), partitions={})
        else:
            meta = SimpleNamespace(error=None, partitions=dict.fromkeys(range(self.partitions)))
        return SimpleNamespace(topics={topic: meta})


@pytest.mark.parametrize("error", [KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE])
def test_a_topic_not_propagated_yet_is_asked_for_again_within_the_call(error: int) -> None:
    cluster = Cluster(unknown_for=3, error=error)
    counts = PartitionCounts()
    assert counts.get(cluster, "t") == 3
    assert cluster.asked == 4
    assert counts.get(cluster, "t") == 3 and cluster.asked == 4, "looked up once"


def test_a_topic_still_missing_after_the_propagation_time_is_unknown() -> None:
    cluster = Cluster(unknown_for=10**9)
    with pytest.raises(KafkaException) as raised:
        PartitionCounts(propagation_ms=100).get(cluster, "t")
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert cluster.asked > 1


def test_another_error_is_raised_at_once() -> None:
    cluster = Cluster(unknown_for=10**9, error=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException) as raised:
        PartitionCounts().get(cluster, "t")
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert cluster.asked == 1


class Unanswered:
    """A handle whose cluster does not answer metadata requests."""

    def __init__(self, code: int) -> None:
        self.code = code

    def list_topics(self, topic: str, timeout: float) -> Any:
        raise KafkaException(KafkaError(self.code, "Failed to get metadata"))


@pytest.mark.parametrize("code", [KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN])
def test_a_cluster_that_does_not_answer_is_back_pressure_not_an_error(code: int) -> None:
    """A killed broker: raw librdkafka would queue the record; the caller retries, and a flip
    moves the producer to a cluster that answers."""
    with pytest.raises(BufferError, match="not known yet"):
        PartitionCounts().get(Unanswered(code), "t")
