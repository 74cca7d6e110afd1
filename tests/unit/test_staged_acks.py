"""Acknowledgements staged per batch and merged into the ledger on commit (memory config center)."""

from __future__ import annotations

import time

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import CopyMark, StagedAcks, StagedPart, SwitchHints, copy_from, read_on
from hotstandby.failover.ledger.store import LedgerStore
from tests.support import capture_logs

S1, S2 = b"\x01" * 16, b"\x02" * 16
NOW = int(time.time() * 1000)
GROUP = "orders-etl"


def rid(session: bytes, seq: int, partition: int = 0) -> RecordId:
    return RecordId(session, partition, seq)


def part(topic: str, partition: int, acks: list[RecordId], timestamps: dict[str, dict[int, int]]) -> StagedPart:
    ledger = PartitionLedger()
    for r in acks:
        ledger.ack(r, NOW)
    return StagedPart(topic, partition, ledger, timestamps)


@pytest.fixture
def center() -> ConfigCenter:
    return ConfigCenter(MemoryStore(), "/t")


@pytest.fixture
def acks(center: ConfigCenter) -> StagedAcks:
    return StagedAcks(center, GROUP, store=LedgerStore(center), owner="driver-1")


def staged_keys(center: ConfigCenter, batch: str) -> list[str]:
    kvs, _ = center.store.get_prefix(center.keys.staged(GROUP, batch))
    return sorted(kv.key for kv in kvs)


def acked(ledger: PartitionLedger, session: bytes, upto: int) -> list[int]:
    return [seq for seq in range(upto) if ledger.has(rid(session, seq))]


def test_commit_merges_the_staged_parts_into_the_ledger(center: ConfigCenter, acks: StagedAcks) -> None:
    acks.stage("7", 0, part("orders", 0, [rid(S1, 0), rid(S1, 1)], {"orders": {0: 1000}, "kafka-a.orders": {0: 900}}))
    acks.stage("7", 1, part("orders", 0, [rid(S1, 5), rid(S2, 0)], {"orders": {0: 800, 1: 50}}))
    acks.stage("7", 2, part("payments", 3, [rid(S2, 9, 3)], {"payments": {3: 77}}))
    assert staged_keys(center, "7") == [
        "/t/staged/orders-etl/7/orders/0/0",
        "/t/staged/orders-etl/7/orders/0/1",
        "/t/staged/orders-etl/7/payments/3/2",
    ]
    assert acks.load("orders", 0) == PartitionLedger()  # nothing before the commit

    stamps = acks.commit("7").timestamps

    assert stamps == {"orders": {0: 1000, 1: 50}, "kafka-a.orders": {0: 900}, "payments": {3: 77}}
    orders = acks.load("orders", 0)
    assert acked(orders, S1, 10) == [0, 1, 5] and acked(orders, S2, 10) == [0]
    assert len(orders) == 4
    payments = acks.load("payments", 3)
    assert payments.has(rid(S2, 9, 3)) and len(payments) == 1
    assert acks.load("orders", 1) == PartitionLedger()
    assert staged_keys(center, "7") == []
    # the commit claimed the ledger for its owner
    doc = LedgerStore(center).load(GROUP, "orders", 0)
    assert doc.owner == "driver-1" and doc.generation >= 0


def test_a_second_commit_of_the_same_batch_changes_nothing(center: ConfigCenter, acks: StagedAcks) -> None:
    acks.stage("7", 0, part("orders", 0, [rid(S1, 0)], {"orders": {0: 5}}))
    assert acks.commit("7").timestamps == {"orders": {0: 5}}
    before = center.store.get_prefix("/t/")
    assert acks.commit("7").timestamps == {}
    assert center.store.get_prefix("/t/") == before
    assert acked(acks.load("orders", 0), S1, 5) == [0]


def test_staging_the_same_part_twice_is_idempotent(center: ConfigCenter, acks: StagedAcks) -> None:
    first = part("orders", 0, [rid(S1, 0), rid(S1, 1)], {"orders": {0: 10}})
    acks.stage("3", 0, first)
    value = center.store.get(staged_keys(center, "3")[0])
    acks.stage("3", 0, part("orders", 0, [rid(S1, 0), rid(S1, 1)], {"orders": {0: 10}}))  # the task's retry
    assert staged_keys(center, "3") == ["/t/staged/orders-etl/3/orders/0/0"]
    assert center.store.get(staged_keys(center, "3")[0]).value == value.value  # type: ignore[union-attr]
    assert acks.commit("3").timestamps == {"orders": {0: 10}}
    ledger = acks.load("orders", 0)
    assert acked(ledger, S1, 5) == [0, 1] and len(ledger) == 2


def test_a_batch_never_committed_leaves_the_ledger_alone(center: ConfigCenter, acks: StagedAcks) -> None:
    acks.stage("1", 0, part("orders", 0, [rid(S1, 0)], {"orders": {0: 1}}))
    acks.commit("1")
    acks.stage("2", 0, part("orders", 0, [rid(S1, 1), rid(S2, 0)], {"orders": {0: 2}}))  # never committed
    ledger_key = LedgerStore(center).key(GROUP, "orders", 0)
    stored = center.store.get(ledger_key)
    assert acks.commit("1").timestamps == {}  # another batch's commit does not take batch 2's parts
    assert center.store.get(ledger_key) == stored
    assert acked(acks.load("orders", 0), S1, 5) == [0] and not acks.load("orders", 0).has(rid(S2, 0))
    assert staged_keys(center, "2") == ["/t/staged/orders-etl/2/orders/0/0"]
    assert [key for key, _ in acks.staged("2")] == staged_keys(center, "2")


def test_batches_of_other_groups_are_kept_apart(center: ConfigCenter, acks: StagedAcks) -> None:
    other = StagedAcks(center, "other-query")
    other.stage("7", 0, part("orders", 0, [rid(S2, 3)], {"orders": {0: 9}}))
    acks.stage("7", 0, part("orders", 0, [rid(S1, 0)], {"orders": {0: 1}}))
    assert acks.commit("7").timestamps == {"orders": {0: 1}}
    assert not acks.load("orders", 0).has(rid(S2, 3))
    assert other.load("orders", 0) == PartitionLedger()
    assert other.commit("7").timestamps == {"orders": {0: 9}} and other.load("orders", 0).has(rid(S2, 3))


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"[]",
        b'{"v": 2}',
        b'{"v": 1, "timestamps": {"orders": {"0": "late"}}}',
        b'{"v": 1, "timestamps": 5}',
        b'{"v": 1, "copies": {"t": {"pulsar-b": "3:x:00"}}}',
        b'{"v": 1, "copies": {"t": {"pulsar-b": 5}}}',
        b'{"v": 1, "copies": ["t"]}',
    ],
)
def test_a_malformed_staged_value_is_skipped_and_logged(center: ConfigCenter, acks: StagedAcks, raw: bytes) -> None:
    acks.stage("9", 0, part("orders", 0, [rid(S1, 4)], {"orders": {0: 40}}))
    bad_key = center.keys.staged_part(GROUP, "9", "orders", 0, 1)
    center.store.put(bad_key, raw)
    with capture_logs() as logs:
        stamps = acks.commit("9").timestamps
    assert stamps == {"orders": {0: 40}}
    assert acked(acks.load("orders", 0), S1, 10) == [4]
    rejected = [e for e in logs if e["event"] == "ledger.staged_rejected"]
    assert [e["key"] for e in rejected] == [bad_key]
    assert rejected[0]["log_level"] == "error"
    assert staged_keys(center, "9") == [], "logged once, then forgotten with the batch"


def test_a_staged_key_that_does_not_name_a_partition_is_skipped(center: ConfigCenter, acks: StagedAcks) -> None:
    stray = center.keys.staged(GROUP, "4") + "orders/zero/0"
    center.store.put(stray, part("orders", 0, [rid(S1, 0)], {}).to_json().encode())
    with capture_logs() as logs:
        assert acks.commit("4").timestamps == {}
    assert [e["key"] for e in logs if e["event"] == "ledger.staged_rejected"] == [stray]
    assert acks.load("orders", 0) == PartitionLedger()


def test_a_staged_part_round_trips_through_json() -> None:
    original = part("a/b", 2, [rid(S1, 0), rid(S1, 1), rid(S2, 7)], {"a/b": {10: 5, 2: 6}, "k.a/b": {2: 1}})
    text = original.to_json()
    assert '"timestamps":{"a/b":{"2":6,"10":5},"k.a/b":{"2":1}}' in text
    back = StagedPart.from_json("a/b", 2, text.encode(), "k")
    assert back == original


def test_topics_with_slashes_are_staged_and_committed(center: ConfigCenter, acks: StagedAcks) -> None:
    acks.stage("b/1", 0, part("a/b", 2, [rid(S1, 3)], {"a/b": {2: 8}}))
    assert [(p.topic, p.partition) for _, p in acks.staged("b/1")] == [("a/b", 2)]
    assert acks.commit("b/1").timestamps == {"a/b": {2: 8}}
    assert acks.load("a/b", 2).has(rid(S1, 3))


def test_commit_keeps_the_newest_copy_per_topic_and_cluster_it_came_from(acks: StagedAcks) -> None:
    older, newer, other = CopyMark(7, 40, rid(S1, 1)), CopyMark(8, 2, rid(S1, 9)), CopyMark(3, 5, rid(S2, 0))
    acks.stage("5", 0, StagedPart.of("t", 0, [rid(S1, 1)], copies={"t-partition-0": {"pulsar-b": newer}}))
    acks.stage("5", 1, StagedPart.of("t", 0, [rid(S1, 9)], copies={"t-partition-0": {"pulsar-b": older, "": other}}))
    hints = acks.commit("5")
    assert hints.copies == {"t-partition-0": {"pulsar-b": newer, "": other}}
    hints.merge(acks.commit("5"))  # nothing staged any more: unchanged
    assert hints.copies["t-partition-0"]["pulsar-b"] == newer


def test_a_staged_part_with_copies_round_trips_through_json() -> None:
    original = StagedPart.of("t", 1, [rid(S2, 4)], copies={"t-partition-1": {"pulsar-a": CopyMark(12, 0, rid(S2, 4))}})
    back = StagedPart.from_json("t", 1, original.to_json().encode(), "k")
    assert back == original and back.copies["t-partition-1"]["pulsar-a"].identity == rid(S2, 4)


def test_peek_tells_what_a_batch_staged_and_leaves_it_staged(center: ConfigCenter, acks: StagedAcks) -> None:
    mark = CopyMark(4, 9, rid(S1, 2))
    acks.stage("6", 0, StagedPart.of("t", 0, [rid(S1, 2)], timestamps={"t": {0: 5}}, copies={"t": {"a": mark}}))
    hints = acks.peek("6")
    assert (hints.timestamps, hints.copies) == ({"t": {0: 5}}, {"t": {"a": mark}})
    assert acks.load("t", 0) == PartitionLedger() and staged_keys(center, "6"), "not committed by a peek"
    assert acks.commit("6").copies == {"t": {"a": mark}}


def test_copies_of_unknown_origin_are_kept_by_the_cluster_they_were_read_on() -> None:
    """Apache Pulsar's copies do not name their origin. Copies read on pulsar-a name pulsar-b's
    ledgers and copies read on pulsar-b name pulsar-a's: merged under one key, the newer
    ``ledger:entry`` of either would win, and a switch would look for it on the wrong cluster."""
    on_a = CopyMark(900, 5, rid(S1, 1))  # read on pulsar-a: an entry of pulsar-b's ledger 900
    on_b = CopyMark(12, 40, rid(S2, 2))  # read on pulsar-b: an entry of pulsar-a's ledger 12
    hints = SwitchHints()
    hints.merge(SwitchHints(copies={"t": {read_on("pulsar-a"): on_a}}))
    hints.merge(SwitchHints(copies={"t": {read_on("pulsar-b"): on_b}}))
    clusters = ["pulsar-a", "pulsar-b"]
    assert copy_from("pulsar-a", hints.copies["t"], clusters) == on_b
    assert copy_from("pulsar-b", hints.copies["t"], clusters) == on_a
    named = CopyMark(13, 1, rid(S1, 3))
    assert copy_from("pulsar-a", {**hints.copies["t"], "pulsar-a": named}, clusters) == named
    assert copy_from("pulsar-a", hints.copies["t"], [*clusters, "pulsar-c"]) is None, "origin unknown among three"
