"""Where MM2's replication position is read (the rule that uses it: tests/unit/test_outbox.py)."""

from __future__ import annotations

from hotstandby.adapters.kafka.mm2.replication_progress import progress_topic
from hotstandby.configcenter.documents import Link


def test_the_position_topic_is_named_after_the_source_like_mm2s() -> None:
    assert progress_topic(Link(source="kafka-a", target="kafka-b")) == "mm2-offsets.kafka-a.internal"
    assert progress_topic(Link(source="a", target="b", separator="_")) == "mm2-offsets_a_internal"
