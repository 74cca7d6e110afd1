"""MM2 offset-sync emission, the 64-slot store and its translation rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hotstandby.adapters.kafka.mm2.codec import OffsetSync
from hotstandby.adapters.kafka.mm2.syncs import SLOTS, OffsetSyncEmitter, OffsetSyncStore


def emitted(emitter: OffsetSyncEmitter) -> list[tuple[int, int]]:
    return [(s.upstream_offset, s.downstream_offset) for s in emitter.take_pending()]


def test_first_record_syncs_at_once_then_every_offset_lag_max() -> None:
    e = OffsetSyncEmitter(max_offset_lag=100)
    e.record_written("t", 0, 0, 0)
    assert emitted(e) == [(0, 0)]
    for i in range(1, 101):
        e.record_written("t", 0, i, i)
    # downstream 101 is the first with 101 - (0 + 1) >= 100
    assert emitted(e) == []
    e.record_written("t", 0, 101, 101)
    assert emitted(e) == [(101, 101)]


def test_every_due_sync_is_kept_in_order_within_a_batch() -> None:
    e = OffsetSyncEmitter(max_offset_lag=100)
    for i in range(250):
        e.record_written("t", 0, i, i)
    e.promote_delayed()
    assert emitted(e) == [(0, 0), (101, 101), (202, 202), (249, 249)]


def test_skipped_upstream_and_truncated_downstream_sync_at_once() -> None:
    e = OffsetSyncEmitter()
    e.record_written("t", 0, 0, 0)
    e.take_pending()
    e.record_written("t", 0, 1, 1)
    assert emitted(e) == []
    e.record_written("t", 0, 5, 2)  # upstream 2..4 were not replicated (filtered, compacted)
    assert emitted(e) == [(5, 2)]
    e.record_written("t", 0, 6, 0)  # the target topic was recreated
    assert emitted(e) == [(6, 0)]


def test_held_back_positions_are_sent_at_the_periodic_commit() -> None:
    e = OffsetSyncEmitter()
    e.record_written("t", 0, 0, 10)
    e.record_written("t", 1, 0, 20)
    e.take_pending()
    e.record_written("t", 0, 1, 11)
    e.record_written("t", 0, 2, 12)
    assert emitted(e) == []
    e.promote_delayed()
    assert emitted(e) == [(2, 12)]
    e.promote_delayed()
    assert emitted(e) == [], "nothing new to promote"


def test_failed_writes_are_requeued_ahead_of_newer_ones() -> None:
    e = OffsetSyncEmitter()
    e.record_written("t", 0, 0, 0)
    failed = e.take_pending()
    e.record_written("t", 0, 7, 3)  # skipped upstream: due now
    e.requeue(failed)
    assert emitted(e) == [(0, 0), (7, 3)]


def store_with(*pairs: tuple[int, int], topic: str = "t") -> OffsetSyncStore:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    for up, down in pairs:
        store.add(OffsetSync(topic, 0, up, down))
    return store


def test_translation_rule() -> None:
    store = store_with((100, 40), (200, 90))
    assert store.translate("t", 0, 200) == 90  # equal: the sync's downstream offset
    assert store.translate("t", 0, 250) == 91  # ahead: one past it, never more
    assert store.translate("t", 0, 150) == 41  # between: relative to the older sync
    assert store.translate("t", 0, 99) == -1  # before every kept sync: too old
    assert store.translate("t", 1, 100) is None  # no syncs for the partition
    fresh = OffsetSyncStore()
    fresh.add(OffsetSync("t", 0, 1, 1))
    assert fresh.translate("t", 0, 1) is None, "nothing before the syncs topic was read to its end"


def test_upstream_rewind_clears_the_partition() -> None:
    store = store_with((100, 40), (200, 90), (50, 95))
    assert store.syncs("t", 0) == [OffsetSync("t", 0, 50, 95)] * SLOTS
    assert store.translate("t", 0, 100) == 96


def test_must_read_to_end_keeps_only_the_newest_during_the_first_read() -> None:
    store = OffsetSyncStore(must_read_to_end=True)
    for up in (10, 20, 30):
        store.add(OffsetSync("t", 0, up, up))
    store.mark_read_to_end()
    assert store.translate("t", 0, 25) == -1
    assert store.translate("t", 0, 30) == 30


def invariants_hold(slots: list[OffsetSync]) -> bool:
    for i in range(SLOTS):
        for j in range(i + 1, SLOTS):
            a, b = slots[i], slots[j]
            if a is b:
                continue
            if not b.upstream_offset <= a.upstream_offset:  # newer first
                return False
            if j < 62 and not a.upstream_offset <= b.upstream_offset + (1 << j) - (1 << i):  # B
                return False
            if not a.upstream_offset >= b.upstream_offset + (1 << max(i - 2, 0)):  # C
                return False
    return True


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=300))
def test_store_keeps_its_invariants(gaps: list[int]) -> None:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    up = 0
    for gap in gaps:
        up += gap
        store.add(OffsetSync("t", 0, up, up // 2))
        slots = store.syncs("t", 0)
        assert slots[0].upstream_offset == up, "slot 0 is always the newest sync"
    assert invariants_hold(store.syncs("t", 0))


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3)), min_size=1, max_size=400),
    lag=st.integers(1, 120),
    data=st.data(),
)
def test_translation_never_points_past_the_first_unconsumed_record(
    steps: list[tuple[int, int]], lag: int, data: st.DataObject
) -> None:
    """Replicate with skipped upstream offsets and duplicated downstream writes, emit syncs by
    MM2's rules (with periodic commits), then translate any committed offset: the result must
    never skip a record the group has not consumed: each one keeps a copy at or after it."""
    emitter, store = OffsetSyncEmitter(max_offset_lag=lag), OffsetSyncStore()
    store.mark_read_to_end()
    last_copy: dict[int, int] = {}  # upstream offset -> downstream offset of its last copy
    up, down = -1, -1
    for i, (up_step, dupes) in enumerate(steps):
        up += up_step
        for _ in range(1 + dupes % 2):  # sometimes written twice (at-least-once)
            down += 1
            last_copy[up] = down
            emitter.record_written("t", 0, up, down)
        if i % 37 == 0:
            emitter.promote_delayed()
        for sync in emitter.take_pending():
            store.add(sync)
    committed = data.draw(st.integers(0, up + 1))
    translated = store.translate("t", 0, committed)
    assert translated is not None
    unconsumed = [last_copy[u] for u in last_copy if u >= committed]
    assert translated <= min(unconsumed, default=down + 1)
