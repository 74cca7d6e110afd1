"""What a Pulsar subscription of several topics reads, and under which names its
acknowledgements are kept (no broker)."""

from __future__ import annotations

import re
import time

import pulsar
import pytest

from hotstandby.adapters.pulsar.topics import TopicSelection, full_topic, matching, subscribe_pattern
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore

FULL = "persistent://public/default/"


def test_subscribe_takes_a_topic_a_list_or_a_compiled_pattern_as_pulsar_client() -> None:
    assert TopicSelection.of("t").single == "t"
    assert TopicSelection.of(["a", "b"]).listed == ("a", "b")
    assert TopicSelection.of(re.compile("x.*")).pattern == re.compile("x.*")
    for other in (("a",), 5, re.compile(b"x"), ["a", 1]):
        with pytest.raises(ValueError, match=re.escape("(str, list, re.pattern)")):
            TopicSelection.of(other)


def test_a_listed_topics_messages_are_kept_under_the_name_it_was_listed_by() -> None:
    listed = TopicSelection.of(["orders", f"{FULL}payments"])
    assert listed.logical(f"{FULL}orders") == "orders"
    assert listed.logical(f"{FULL}payments-partition-2") == f"{FULL}payments"
    assert listed.covers("orders") and listed.covers(f"{FULL}payments")
    assert not listed.covers(f"{FULL}orders"), "another name: another ledger"


def test_a_patterns_messages_are_kept_under_full_names_and_it_covers_what_it_matches() -> None:
    pattern = TopicSelection.of(re.compile(f"{FULL}orders-.*"))
    assert pattern.logical(f"{FULL}orders-eu-partition-0") == f"{FULL}orders-eu"
    assert pattern.covers(f"{FULL}orders-eu")
    assert not pattern.covers("orders-eu"), "a short name is no topic a pattern subscribes to"
    assert not pattern.covers(f"{FULL}payments")
    assert TopicSelection.of("t").logical(f"{FULL}t-partition-1") == "t"


def test_selections_are_told_apart() -> None:
    keys = {TopicSelection.of(t).key for t in ("a", ["a"], ["a", "b"], re.compile("a"), re.compile("a", re.I))}
    assert len(keys) == 5
    assert TopicSelection.of(["a", "b"]).key == TopicSelection.of(["a", "b"]).key


def test_a_pattern_matches_whole_full_names_of_the_domains_the_mode_names() -> None:
    names = ["orders-1", f"{FULL}orders-2", f"{FULL}orders-2", "non-persistent://public/default/orders-3",
             f"{FULL}xorders-4", f"{FULL}orders"]  # fmt: skip
    pattern = re.compile(r".*/orders-\d")
    assert matching(pattern, names) == [f"{FULL}orders-1", f"{FULL}orders-2"]
    assert matching(pattern, names, pulsar.RegexSubscriptionMode.NonPersistentOnly) == [
        "non-persistent://public/default/orders-3"
    ]
    assert len(matching(pattern, names, pulsar.RegexSubscriptionMode.AllTopics)) == 3


class _Client:
    """Stands in for pulsar.Client: notes what was subscribed to."""

    def __init__(self) -> None:
        self.subscribed: list[object] = []

    def subscribe(self, topic: object, subscription: str, **kwargs: object) -> str:
        self.subscribed.append(topic)
        return "consumer"


def test_a_pattern_matches_the_registered_topics_or_else_the_broker_resolves_it() -> None:
    pattern = re.compile(f"{FULL}orders-.*")
    client = _Client()
    registered = [f"{FULL}orders-1", f"{FULL}other", f"{FULL}orders-2"]
    subscribe_pattern(client, pattern, "s", {}, cluster="c", registered=lambda: registered)  # type: ignore[arg-type]
    subscribe_pattern(client, pattern, "s", {}, cluster="c", registered=list)  # type: ignore[arg-type]
    assert client.subscribed == [[f"{FULL}orders-1", f"{FULL}orders-2"], pattern]


def test_the_ledgers_of_a_group_are_read_at_once_by_topic_and_partition() -> None:
    center = ConfigCenter(MemoryStore(), "/t")
    store = LedgerStore(center)
    for topic, partition in ((f"{FULL}a", 0), ("b", 2)):
        ledger = PartitionLedger()
        ledger.ack(RecordId(bytes(16), partition, 1), int(time.time() * 1000))
        store.save("g", topic, partition, ledger, generation=0, owner="me")
    store.save("other", "a", 0, PartitionLedger(), generation=0, owner="me")
    center.store.put(center.keys.group_ledgers("g") + "not-a-ledger", b"{}")
    loaded = store.load_group("g")
    assert sorted(loaded) == [("b", 2), (f"{FULL}a", 0)]
    assert loaded[("b", 2)].ledger.has(RecordId(bytes(16), 2, 1))


def test_names_are_completed_as_pulsar_client_completes_them() -> None:
    assert full_topic("t") == f"{FULL}t"
    assert full_topic("acme/orders/t") == "persistent://acme/orders/t"
    assert full_topic("acme/east/orders/t") == "persistent://acme/east/orders/t"  # the old, four-part form
    assert full_topic("non-persistent://acme/orders/t") == "non-persistent://acme/orders/t"


def test_a_pattern_without_a_domain_matches_names_without_theirs() -> None:
    pattern = re.compile(r"public/default/orders-\d")
    assert matching(pattern, ["orders-1", "other", f"{FULL}orders-2"]) == [f"{FULL}orders-1", f"{FULL}orders-2"]
    assert TopicSelection(pattern=pattern).covers(f"{FULL}orders-3")
    assert not TopicSelection(pattern=re.compile(r"persistent://public/default/orders-\d")).covers(
        "public/default/orders-3"
    )
