"""A Kafka seek: records handed out from the sought position on and not acknowledged are handed
out again; acknowledged ones are not; nothing from there on counts as processed."""

from __future__ import annotations

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker

S = bytes(16)
SLOT = ("orders", 0)


def rid(seq: int) -> RecordId:
    return RecordId(S, 0, seq)


def offered(t: AckTracker, positions: range) -> list[int]:
    return [p for p in positions if t.offer("orders", SLOT, p, rid(p), 1000 + p)]


def test_a_seek_back_hands_out_again_what_was_not_acknowledged() -> None:
    t = AckTracker()
    assert offered(t, range(0, 10)) == list(range(10))
    t.acknowledge_through(SLOT, 4)  # commit of offset 3
    t.collect(now_ms=1)
    t.mark_processed(SLOT, 8)
    t.rewind(SLOT, 2)
    assert t.processed_positions()[SLOT] == 2, "nothing after the sought position counts as processed"
    # Read again from 2: 2 and 3 were acknowledged (filtered), 4..9 come again.
    assert offered(t, range(2, 10)) == list(range(4, 10))
    t.acknowledge_through(SLOT, 10)
    t.collect(now_ms=2)
    assert all(t.ledgers[("orders", 0)].has(rid(p)) for p in range(10))


def test_without_a_rewind_a_record_read_again_is_in_flight() -> None:
    """What the rewind is for: a slot read again from an earlier position otherwise filters the
    records it handed out and that are still in flight."""
    t = AckTracker()
    offered(t, range(0, 5))
    assert offered(t, range(3, 5)) == []
    t.rewind(SLOT, 3)
    assert offered(t, range(3, 5)) == [3, 4]


def test_read_at_tells_which_offsets_a_slot_delivered() -> None:
    t = AckTracker()
    offered(t, range(5, 8))
    assert [p for p in range(10) if t.read_at(SLOT, p)] == [5, 6, 7]
    assert not t.read_at(("kafka-b.orders", 0), 6)
