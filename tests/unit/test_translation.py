"""Start-position translation: the chooser, MM2 forward and reverse rules (property-tested)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotstandby.adapters.kafka.mm2.codec import Checkpoint, OffsetSync
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncEmitter, OffsetSyncStore
from hotstandby.adapters.kafka.mm2.translate import forward, from_checkpoints, reverse
from hotstandby.failover.translation import Proposal, Strategy, choose


def test_furthest_exact_proposal_wins_and_fallbacks_only_run_when_needed() -> None:
    ran: list[str] = []

    def s(name: str, pos: int | None, exact: bool = True) -> Strategy:
        def propose() -> Proposal | None:
            ran.append(name)
            return None if pos is None else Proposal(pos, name)

        return Strategy(name, propose, exact)

    assert choose([s("a", 10), s("b", 40), s("c", None), s("ts", 99, exact=False)]).strategy == "b"
    assert "ts" not in ran
    assert choose([s("a", None), s("ts", 7, exact=False), s("earliest", 0, exact=False)]).strategy == "ts"
    with pytest.raises(LookupError):
        choose([s("a", None)])


def test_checkpoints_newest_wins() -> None:
    cps = [Checkpoint("g", "A.t", 0, 10, 5), Checkpoint("g", "A.t", 0, 20, 15), Checkpoint("h", "A.t", 0, 99, 99)]
    assert from_checkpoints(cps, "g", "A.t", 0) == Proposal(15, "mm2-checkpoint", "g A.t[0] upstream 20")
    assert from_checkpoints(cps, "g", "A.t", 1) is None


def replicate(steps: list[tuple[int, int]], lag: int) -> tuple[list[OffsetSync], dict[int, list[int]]]:
    """Copy records with skipped upstream offsets and duplicates; returns the syncs written and
    upstream offset -> downstream offsets of its copies."""
    emitter = OffsetSyncEmitter(max_offset_lag=lag)
    written: list[OffsetSync] = []
    copies: dict[int, list[int]] = {}
    up, down = -1, -1
    for i, (step, dupes) in enumerate(steps):
        up += step
        for _ in range(1 + dupes % 2):
            down += 1
            copies.setdefault(up, []).append(down)
            emitter.record_written("t", 0, up, down)
        if i % 29 == 0:
            emitter.promote_delayed()
        written.extend(emitter.take_pending())
    return written, copies


steps = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3)), min_size=1, max_size=300)


@settings(max_examples=80, deadline=None)
@given(steps=steps, lag=st.integers(1, 60), data=st.data())
def test_reverse_translation_never_skips_a_record_not_consumed_on_the_copy(
    steps: list[tuple[int, int]], lag: int, data: st.DataObject
) -> None:
    """The group read the copy up to (not including) ``position``. Starting the original at the
    reverse translation must not skip any original record whose copies all lie at or after it."""
    syncs, copies = replicate(steps, lag)
    down_end = max(d for ds in copies.values() for d in ds) + 1
    position = data.draw(st.integers(0, down_end))
    proposal = reverse(syncs, "t", 0, position)
    if proposal is None:
        return  # no sync at or before the position: another strategy must decide
    unconsumed = [u for u, ds in copies.items() if all(d >= position for d in ds)]
    if unconsumed:
        assert proposal.position <= min(unconsumed), (proposal, position)


@settings(max_examples=60, deadline=None)
@given(steps=steps, lag=st.integers(1, 60), data=st.data())
def test_forward_translation_never_skips(steps: list[tuple[int, int]], lag: int, data: st.DataObject) -> None:
    syncs, copies = replicate(steps, lag)
    store = OffsetSyncStore()
    store.mark_read_to_end()
    for sync in syncs:
        store.add(sync)
    up_end = max(copies) + 1
    committed = data.draw(st.integers(0, up_end))
    proposal = forward(store, "t", 0, committed)
    if proposal is None:
        return
    later = [max(ds) for u, ds in copies.items() if u >= committed]
    if later:
        assert proposal.position <= min(later)


def test_reverse_examples() -> None:
    syncs = [OffsetSync("t", 0, 0, 0), OffsetSync("t", 0, 100, 101), OffsetSync("t", 0, 200, 203)]
    assert reverse(syncs, "t", 0, 101).position == 100  # exactly on a sync
    assert reverse(syncs, "t", 0, 150).position == 101  # past it: one after its upstream
    assert reverse(syncs, "t", 0, 5000).position == 201
    assert reverse(syncs, "u", 0, 150) is None
    recreated = [*syncs, OffsetSync("t", 0, 300, 0)]  # the copy was recreated
    after = reverse(recreated, "t", 0, 150)
    assert after is not None and after.position == 301  # only the sync after the rewind counts
