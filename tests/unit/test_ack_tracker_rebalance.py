"""A Kafka commit covers the earlier records of its partition also across a rebalance: records
handed out before the partition was revoked (and assigned again) stay acknowledgeable."""

from __future__ import annotations

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker

S = bytes(16)
SLOT = ("orders", 0)


def rid(seq: int) -> RecordId:
    return RecordId(S, 0, seq)


def hand_out(t: AckTracker, positions: range) -> None:
    for p in positions:
        assert t.offer("orders", SLOT, p, rid(p), 1000 + p)


def test_a_commit_after_a_rebalance_covers_what_was_handed_out_before_it() -> None:
    t = AckTracker()
    hand_out(t, range(10, 15))  # handed out, not committed yet
    t.forget({SLOT})  # revoked; assigned again: reading restarts at the committed offset 10
    assert t.handed_out(SLOT, 14, rid(14), 1014), "the message the application holds is still ours"
    hand_out(t, range(10, 12))  # read again: not acknowledged, so handed out again (at least once)
    t.acknowledge_through(SLOT, 15)  # commit(message=<offset 14>)
    t.collect(now_ms=1)
    assert all(t.ledgers[("orders", 0)].has(rid(p)) for p in range(10, 15)), "the commit covers 10..14"
    # Read again once more: covered by the commit, never handed out again.
    assert not any(t.offer("orders", SLOT, p, rid(p), 1000 + p) for p in range(10, 15))


def test_a_slot_read_again_from_an_earlier_position_finds_every_record_it_handed_out() -> None:
    t = AckTracker()
    hand_out(t, range(0, 5))
    # Read again from 0 (librdkafka restarted at the committed offset): in flight, filtered.
    assert not any(t.offer("orders", SLOT, p, rid(p), 1000 + p) for p in range(0, 5))
    hand_out(t, range(5, 7))
    for p in range(0, 7):
        assert t.handed_out(SLOT, p, rid(p), 1000 + p), p
    t.acknowledge_through(SLOT, 7)
    t.collect(now_ms=1)
    assert all(t.ledgers[("orders", 0)].has(rid(p)) for p in range(7))
    assert t.outstanding(SLOT) == 0


def test_records_before_a_committed_offset_are_not_handed_out_again_without_identities() -> None:
    """Records without an identity (not written by our producer) are covered by the offset."""
    t = AckTracker()
    for p in range(3):
        assert t.offer("orders", SLOT, p, None, 1000 + p)
    t.acknowledge_through(SLOT, 3)
    t.collect(now_ms=1)
    t.forget({SLOT})
    assert not any(t.offer("orders", SLOT, p, None, 1000 + p) for p in range(3))
    assert t.offer("orders", SLOT, 3, None, 1003)


def test_a_switch_keeps_what_was_set_aside_for_late_commits() -> None:
    t = AckTracker()
    hand_out(t, range(0, 4))
    t.forget({SLOT})
    hand_out(t, range(4, 6))
    t.reset()  # a switch: what is left is acknowledged by identity
    assert t.acknowledge_left_behind(SLOT, 5, rid(5), 1005, now_ms=1) == {("orders", 0)}
    assert all(t.ledgers[("orders", 0)].has(rid(p)) for p in range(6))
