"""The tracker is the one record of a consumer's positions: marked processed (Kafka's stored
offsets), acknowledged through (committed), and the last one handed out."""

from __future__ import annotations

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker

S = bytes(16)
SLOT = ("orders", 0)
OTHER = ("kafka-b.orders", 0)


def rid(seq: int) -> RecordId:
    return RecordId(S, 0, seq)


def test_processed_positions_only_move_forward_and_go_with_a_revoked_slot() -> None:
    t = AckTracker()
    t.mark_processed(SLOT, 5)
    t.mark_processed(SLOT, 3)  # an older store_offsets: no step back
    t.mark_processed(OTHER, 2)
    assert t.processed_positions() == {SLOT: 5, OTHER: 2}
    t.forget({SLOT})  # revoked, nothing handed out there: still dropped
    assert t.processed_positions() == {OTHER: 2}
    t.reset()
    assert t.processed_positions() == {}


def test_acknowledging_what_was_processed_moves_the_acknowledged_positions() -> None:
    t = AckTracker()
    for p in range(3):
        assert t.offer("orders", SLOT, p, rid(p), 1000 + p)
    t.mark_processed(SLOT, 2)
    assert t.acknowledged_positions() == {}
    t.acknowledge_processed()
    assert t.acknowledged_positions() == {SLOT: 2}
    t.collect(now_ms=1)
    assert t.ledgers[("orders", 0)].has(rid(1)) and not t.ledgers[("orders", 0)].has(rid(2))
    t.acknowledge_through(SLOT, 1)  # an older commit: no step back
    assert t.acknowledged_positions() == {SLOT: 2}
    t.reset()  # a switch: positions name the old cluster's records
    assert t.acknowledged_positions() == {}


def test_a_filtered_record_counts_as_processed_only_once_what_was_handed_out_before_it_is() -> None:
    t = AckTracker()
    t.ledger(("orders", 0)).ack(rid(7), 1)  # acknowledged before: filtered when it comes
    assert t.offer("orders", SLOT, 5, rid(5), 1005)  # handed out, not processed yet
    assert not t.offer("orders", SLOT, 7, rid(7), 1007)
    t.mark_filtered_processed(SLOT, 7)
    assert t.processed_positions() == {}, "marking 7 would cover 5, which is not processed"
    t.mark_processed(SLOT, 6)  # 5 processed (what poll returned)
    t.mark_filtered_processed(SLOT, 7)
    assert t.processed_positions() == {SLOT: 8}


def test_on_a_fresh_or_revoked_slot_a_filtered_record_is_processed_at_once() -> None:
    t = AckTracker()
    t.ledger(("orders", 0)).ack(rid(3), 1)
    assert not t.offer("orders", SLOT, 3, rid(3), 1003)
    t.mark_filtered_processed(SLOT, 3)
    assert t.processed_positions() == {SLOT: 4}
    assert t.offer("orders", SLOT, 4, rid(4), 1004)  # handed out, then the slot is revoked
    t.forget({SLOT})
    t.ledger(("orders", 0)).ack(rid(9), 1)
    assert not t.offer("orders", SLOT, 9, rid(9), 1009)  # assigned again later
    t.mark_filtered_processed(SLOT, 9)
    assert t.processed_positions() == {SLOT: 10}, "what was handed out before the revocation is not ours"


def test_reading_a_slot_again_keeps_the_last_handed_out_position() -> None:
    t = AckTracker()
    assert t.offer("orders", SLOT, 5, rid(5), 1005)  # handed out, not processed
    t.ledger(("orders", 0)).ack(rid(1), 1)
    assert not t.offer("orders", SLOT, 1, rid(1), 1001)  # read again from 1 (no revocation)
    t.mark_filtered_processed(SLOT, 1)
    assert t.processed_positions() == {}, "5 is still handed out and not processed"
