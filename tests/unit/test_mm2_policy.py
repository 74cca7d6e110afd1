from __future__ import annotations

import pytest

from hotstandby.adapters.kafka.mm2.policy import (
    GROUPS_EXCLUDE_DEFAULT,
    GROUPS_INCLUDE_DEFAULT,
    NameFilter,
    ReplicationPolicy,
)
from hotstandby.configcenter.documents import Link

prefix = ReplicationPolicy()
TOPICS = NameFilter()


def test_default_policy_names() -> None:
    assert prefix.format_remote_topic("kafka-a", "orders") == "kafka-a.orders"
    assert prefix.topic_source("kafka-a.orders") == "kafka-a"
    assert prefix.upstream_topic("kafka-a.orders") == "orders"
    assert prefix.topic_source("orders") is None and prefix.upstream_topic("orders") is None
    assert prefix.original_topic("b.a.orders") == "orders"
    assert prefix.offset_syncs_topic("kafka-b") == "mm2-offset-syncs.kafka-b.internal"
    assert prefix.checkpoints_topic("kafka-a") == "kafka-a.checkpoints.internal"


def test_custom_separator() -> None:
    p = ReplicationPolicy(separator="__")
    assert p.format_remote_topic("A", "t") == "A__t"
    assert (p.topic_source("A__t"), p.upstream_topic("A__t")) == ("A", "t")
    assert p.checkpoints_topic("A") == "A__checkpoints__internal"


@pytest.mark.parametrize(
    ("topic", "target", "cycle"),
    [
        ("orders", "kafka-a", False),
        ("kafka-a.orders", "kafka-a", True),  # came from the target: never copied back
        ("kafka-b.orders", "kafka-a", False),
        ("kafka-c.kafka-a.orders", "kafka-a", True),  # came from the target through another hop
    ],
)
def test_cycle_rule(topic: str, target: str, cycle: bool) -> None:
    assert prefix.is_cycle(topic, target) is cycle


@pytest.mark.parametrize(
    ("topic", "replicate"),
    [
        ("orders", True),
        ("heartbeats", True),
        ("kafka-b.heartbeats", True),
        ("kafka-a.orders", False),  # cycle, with target kafka-a
        ("__consumer_offsets", False),
        ("mm2-offset-syncs.kafka-a.internal", False),
        ("kafka-b.checkpoints.internal", False),
        ("connect-offsets-internal", False),
        ("x.replica", False),
        (".hidden", False),
    ],
)
def test_what_the_source_connector_replicates(topic: str, replicate: bool) -> None:
    assert prefix.should_replicate(topic, "kafka-a", TOPICS) is replicate


def test_identity_policy_keeps_names_but_prefixes_heartbeats() -> None:
    p = ReplicationPolicy.for_link(Link(source="pulsar-a", target="pulsar-b", policy="identity"))
    assert p.format_remote_topic("pulsar-a", "orders") == "orders"
    assert p.format_remote_topic("pulsar-a", "heartbeats") == "pulsar-a.heartbeats"
    assert p.topic_source("orders") == "pulsar-a" and p.upstream_topic("orders") == "orders"
    assert not p.is_cycle("orders", "pulsar-b"), "identity cannot see cycles by name"


def test_checkpoint_topic_names() -> None:
    assert prefix.checkpoint_topic_name("orders", "kafka-a", "kafka-b") == "kafka-a.orders"
    assert prefix.checkpoint_topic_name("kafka-b.orders", "kafka-a", "kafka-b") == "orders"


def test_name_filters() -> None:
    groups = NameFilter(GROUPS_INCLUDE_DEFAULT, GROUPS_EXCLUDE_DEFAULT)
    assert groups.matches("billing") and not groups.matches("console-consumer-1") and not groups.matches("connect-x")
    only = NameFilter("orders.*, payments", "")
    assert only.matches("orders-eu") and only.matches("payments") and not only.matches("payments2")
