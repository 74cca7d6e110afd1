"""Which replay-window records MM2's replication position proves copied."""

from __future__ import annotations

from hotstandby.adapters.kafka.replication_progress import Position, StoredRecord, progress_topic, replicated
from hotstandby.configcenter.documents import Link

SKEW = 5_000


def record(offset: int, acked_ms: int, topic: str = "orders", partition: int = 0) -> StoredRecord:
    return StoredRecord(topic, partition, offset, acked_ms)


def test_records_at_or_before_a_later_position_are_replicated() -> None:
    positions = {("orders", 0): Position(offset=41, written_ms=100_000)}
    assert replicated(record(41, 90_000), positions, skew_ms=SKEW)
    assert replicated(record(0, 90_000), positions, skew_ms=SKEW)
    assert not replicated(record(42, 90_000), positions, skew_ms=SKEW), "past the position: not copied yet"


def test_other_partitions_and_topics_are_not_covered() -> None:
    positions = {("orders", 0): Position(offset=41, written_ms=100_000)}
    assert not replicated(record(1, 90_000, partition=1), positions, skew_ms=SKEW)
    assert not replicated(record(1, 90_000, topic="payments"), positions, skew_ms=SKEW)
    assert not replicated(record(1, 90_000), {}, skew_ms=SKEW)


def test_a_position_written_before_the_record_was_acknowledged_proves_nothing() -> None:
    # The source came back empty and counts from zero again: a position from before the
    # restart names offsets of records that no longer exist.
    stale = {("orders", 0): Position(offset=50_000, written_ms=100_000)}
    assert not replicated(record(10, 120_000), stale, skew_ms=SKEW)
    # Within the clock-skew margin it is not trusted either.
    assert not replicated(record(10, 96_000), stale, skew_ms=SKEW)
    assert replicated(record(10, 94_999), stale, skew_ms=SKEW)


def test_the_position_topic_is_named_after_the_source_like_mm2s() -> None:
    assert progress_topic(Link(source="kafka-a", target="kafka-b")) == "mm2-offsets.kafka-a.internal"
    assert progress_topic(Link(source="a", target="b", separator="_")) == "mm2-offsets_a_internal"
