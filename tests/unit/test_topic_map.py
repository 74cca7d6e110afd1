"""The Kafka consumer's physical topics: names, remote copies, patterns."""

from __future__ import annotations

import re

from hotstandby.adapters.kafka.consumer.topic_map import physical_topics


def test_names_map_to_themselves_and_their_copies() -> None:
    assert physical_topics(["orders"], ["kafka-b."]) == {"orders": "orders", "kafka-b.orders": "orders"}


def test_a_pattern_subscribes_to_its_matches_and_their_copies_named_by_the_topic() -> None:
    mapping = physical_topics(["^orders.*", "audit"], ["kafka-b."])
    assert sorted(mapping) == ["^kafka-b\\.orders.*", "^orders.*", "audit", "kafka-b.audit"]
    assert re.search(sorted(mapping)[0], "kafka-b.orders-eu")
    assert not re.search(sorted(mapping)[0], "kafka-bXorders-eu"), "the prefix is a literal"
    assert mapping.get("orders-eu", "?") == "orders-eu"
    assert mapping.get("kafka-b.orders-eu", "?") == "orders-eu"
    assert mapping.get("kafka-b.payments", "?") == "?", "a copy of a topic no pattern matches"
    assert mapping.get("payments", "?") == "?"
    assert {p: lg for p, lg in mapping.items() if not p.startswith("^")} == {
        "audit": "audit", "kafka-b.audit": "audit", "orders-eu": "orders-eu", "kafka-b.orders-eu": "orders-eu",
    }  # fmt: skip
