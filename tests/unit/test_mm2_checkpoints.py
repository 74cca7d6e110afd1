from __future__ import annotations

from hotstandby.adapters.kafka.mm2.checkpoints import CheckpointTracker
from hotstandby.adapters.kafka.mm2.codec import Checkpoint, OffsetSync
from hotstandby.adapters.kafka.mm2.policy import NameFilter, ReplicationPolicy
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncStore


def make() -> tuple[CheckpointTracker, OffsetSyncStore]:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    for up, down in ((0, 0), (100, 60)):
        store.add(OffsetSync("orders", 0, up, down))
    return CheckpointTracker(ReplicationPolicy(), "kafka-a", "kafka-b", NameFilter()), store


def test_translated_checkpoint_with_remote_name_and_metadata() -> None:
    tracker, store = make()
    cps = tracker.checkpoints_for_group("g", {("orders", 0): (150, "meta")}, store)
    assert cps == [Checkpoint("g", "kafka-a.orders", 0, 150, 61, "meta")]


def test_partitions_without_syncs_or_filtered_or_uncommitted_get_none() -> None:
    tracker, store = make()
    offsets = {("orders", 1): (5, ""), ("__consumer_offsets", 0): (5, ""), ("orders", 0): (-1001, "")}
    assert tracker.checkpoints_for_group("g", offsets, store) == []


def test_only_new_information_is_emitted() -> None:
    tracker, store = make()
    first = tracker.checkpoints_for_group("g", {("orders", 0): (150, "")}, store)
    tracker.remember(first)
    assert tracker.checkpoints_for_group("g", {("orders", 0): (150, "")}, store) == [], "repeat"
    assert tracker.checkpoints_for_group("g", {("orders", 0): (170, "")}, store) == [], "same downstream"
    store.add(OffsetSync("orders", 0, 200, 120))
    moved = tracker.checkpoints_for_group("g", {("orders", 0): (200, "")}, store)
    assert [c.downstream_offset for c in moved] == [120]
    tracker.remember(moved)
    rewound = tracker.checkpoints_for_group("g", {("orders", 0): (100, "")}, store)
    assert [(c.upstream_offset, c.downstream_offset) for c in rewound] == [(100, 60)], "a rewind is emitted"


def test_topics_from_the_target_are_checkpointed_under_their_original_name() -> None:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    store.add(OffsetSync("kafka-b.orders", 0, 10, 7))
    tracker = CheckpointTracker(ReplicationPolicy(), "kafka-a", "kafka-b", NameFilter())
    [cp] = tracker.checkpoints_for_group("g", {("kafka-b.orders", 0): (10, "")}, store)
    assert cp.topic == "orders"
