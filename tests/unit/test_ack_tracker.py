"""The broker-neutral bookkeeping of what a consumer handed out and what is acknowledged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker
from hotstandby.failover.ledger.ledger import PartitionLedger

S = bytes(16)


def rid(seq: int, partition: int = 0) -> RecordId:
    return RecordId(S, partition, seq)


def test_an_acknowledged_identity_is_filtered_on_any_slot() -> None:
    t = AckTracker()
    assert t.offer("orders", ("orders", 0), 0, rid(0), 100)
    t.acknowledge_through(("orders", 0), 1)
    assert t.collect(now_ms=1) == {("orders", 0)}
    assert rid(0) in t.ledgers[("orders", 0)]
    # The same record replicated (remote copy) or re-sent: filtered, and counted.
    assert not t.offer("orders", ("kafka-b.orders", 0), 7, rid(0), 100)
    assert not t.offer("orders", ("orders", 0), 5, rid(0), 100)
    assert t.filtered == 2
    # Another logical topic has its own ledger.
    assert t.offer("payments", ("payments", 0), 0, rid(0), 100)


def test_a_twin_arriving_while_the_first_is_in_flight_is_not_handed_out() -> None:
    t = AckTracker()
    assert t.offer("orders", ("orders", 1), 10, rid(3, 1), 100)
    assert not t.offer("orders", ("kafka-b.orders", 1), 2, rid(3, 1), 100)
    # Once the slot is taken away, the first is no longer in flight: the next reader may hand it out.
    t.forget({("orders", 1)})
    assert t.offer("orders", ("kafka-b.orders", 1), 3, rid(3, 1), 100)


def test_records_without_identity_are_always_handed_out() -> None:
    t = AckTracker()
    assert t.offer("orders", ("orders", 0), 0, None, 1)
    assert t.offer("orders", ("orders", 0), 1, None, 1)
    t.acknowledge_through(("orders", 0), 2)
    assert t.collect(now_ms=1) == set()
    assert t.outstanding(("orders", 0)) == 0


def test_acknowledging_through_a_position_covers_only_what_is_before_it() -> None:
    t = AckTracker()
    for i in range(5):
        t.offer("orders", ("orders", 0), i, rid(i), 1000 + i)
    t.acknowledge_through(("orders", 0), 3)
    t.acknowledge_through(("orders", 0), 2)  # an older commit does not go back
    t.collect(now_ms=1)
    ledger = t.ledgers[("orders", 0)]
    assert [i for i in range(5) if rid(i) in ledger] == [0, 1, 2]
    assert t.outstanding(("orders", 0)) == 2
    assert t.last_acked_ts[("orders", 0)] == 1002
    assert t.next_positions() == {("orders", 0): 5}


def test_individual_acks_out_of_order_and_the_timestamp_of_the_acknowledged_prefix() -> None:
    t = AckTracker()
    for i in range(5):
        t.offer("orders", ("orders", 0), i, rid(i), 1000 + i)
    for position in (3, 0, 4):
        t.acknowledge(("orders", 0), position)
    t.collect(now_ms=1)
    ledger = t.ledgers[("orders", 0)]
    assert sorted(i for i in range(5) if rid(i) in ledger) == [0, 3, 4]
    assert t.outstanding(("orders", 0)) == 2
    # 1 is not acknowledged: a timestamp seek must not start after it.
    assert t.last_acked_ts[("orders", 0)] == 1000
    # 1 and 2 are still in flight; acknowledging them completes the slot.
    assert not t.offer("orders", ("kafka-b.orders", 0), 9, rid(1), 1)
    t.acknowledge(("orders", 0), 1)
    t.acknowledge(("orders", 0), 2)
    t.collect(now_ms=1)
    assert all(rid(i) in ledger for i in range(5))
    assert t.outstanding(("orders", 0)) == 0
    assert t.outstanding(("kafka-b.orders", 0)) == 1  # the filtered twin, not acknowledged there yet


def test_handed_out_names_only_the_record_handed_out_here_and_not_yet_collected() -> None:
    t = AckTracker()
    for pos in range(5):
        t.offer("orders", ("orders", 0), pos, rid(pos), 100 + pos)
    t.offer("orders", ("orders", 0), 5, None, 105)  # anonymous
    assert t.handed_out(("orders", 0), 3, rid(3), 103)
    assert t.handed_out(("orders", 0), 5, None, 105)
    # Same slot and position on a cluster the consumer left: another record.
    assert not t.handed_out(("orders", 0), 3, rid(9), 103)
    assert not t.handed_out(("orders", 0), 5, None, 999)
    assert not t.handed_out(("orders", 0), 6, rid(6), 106)
    assert not t.handed_out(("orders", 1), 3, rid(3), 103)
    t.acknowledge_through(("orders", 0), 4)
    t.collect(now_ms=1)
    assert not t.handed_out(("orders", 0), 3, rid(3), 103), "collected: nothing left to acknowledge"
    assert t.handed_out(("orders", 0), 4, rid(4), 104)
    t.reset()
    assert not t.handed_out(("orders", 0), 4, rid(4), 104), "a switch: what was handed out is gone"


def test_a_late_acknowledgement_after_a_switch_counts_by_identity_only() -> None:
    t = AckTracker()
    for pos in range(10, 15):
        t.offer("orders", ("orders", 0), pos, rid(pos), pos)
    t.acknowledge_through(("orders", 0), 11)
    t.collect(now_ms=1)
    t.reset()  # the switch: 11..14 were handed out on the old cluster, not acknowledged
    t.offer("orders", ("orders", 0), 13, rid(99), 13)  # the new cluster's record at offset 13
    # The application commits the old cluster's record at 13: it and 11, 12 join the ledger...
    assert not t.handed_out(("orders", 0), 13, rid(13), 13)
    assert t.acknowledge_left_behind(("orders", 0), 13, rid(13), 13, now_ms=2) == {("orders", 0)}
    assert [r in t.ledgers[("orders", 0)] for r in (rid(11), rid(12), rid(13), rid(14))] == [True, True, True, False]
    # ... the new cluster's record at the same offset does not.
    assert rid(99) not in t.ledgers[("orders", 0)]
    assert t.handed_out(("orders", 0), 13, rid(99), 13)
    assert t.acknowledge_left_behind(("orders", 0), 13, rid(13), 13, now_ms=3) is None, "once"
    assert t.acknowledge_left_behind(("orders", 0), 14, rid(7), 14, now_ms=3) is None, "not that record"
    # Copies of the acknowledged ones are filtered on any slot.
    assert not t.offer("orders", ("kafka-a.orders", 0), 3, rid(12), 12)
    assert t.acknowledge_identity("orders", rid(12), now_ms=4) is None, "held already"
    assert t.acknowledge_identity("orders", rid(14), now_ms=4) == ("orders", 0)


def test_merged_ledgers_filter_and_reset_keeps_them() -> None:
    t = AckTracker()
    stored = PartitionLedger()
    stored.ack(rid(8), 1)
    t.merge(("orders", 0), stored)
    assert not t.offer("orders", ("orders", 0), 0, rid(8), 1)
    assert t.offer("orders", ("orders", 0), 1, rid(9), 1)
    t.reset()
    assert t.outstanding(("orders", 0)) == 0
    assert t.offer("orders", ("orders", 0), 1, rid(9), 1), "in flight on the old cluster only"
    assert not t.offer("orders", ("orders", 0), 0, rid(8), 1)


@given(st.lists(st.integers(0, 49), unique=True), st.integers(0, 50))
def test_every_record_is_acknowledged_once_whatever_the_ack_order(order: list[int], through: int) -> None:
    t = AckTracker()
    for i in range(50):
        assert t.offer("t", ("t", 0), i, rid(i), i)
    for position in order:
        t.acknowledge(("t", 0), position)
    t.acknowledge_through(("t", 0), through)
    t.collect(now_ms=1)
    acked = set(order) | set(range(through))
    ledger = t.ledgers.get(("t", 0), PartitionLedger())
    assert {i for i in range(50) if rid(i) in ledger} == acked
    assert t.outstanding(("t", 0)) == 50 - len(acked)
    prefix = next((i for i in range(50) if i not in acked), 50)
    assert t.last_acked_ts.get(("t", 0)) == (prefix - 1 if prefix else None)


def test_a_released_record_is_handed_out_again_and_never_acknowledged() -> None:
    t = AckTracker()
    slot = ("persistent://public/default/t-partition-0", 0)
    for pos in range(3):
        assert t.offer("t", slot, pos, rid(pos), 100 + pos)
    assert not t.offer("t", slot, 3, rid(1), 101), "in flight"
    t.release(slot, 1)  # a negative acknowledgement
    assert t.offer("t", slot, 4, rid(1), 101), "given back: handed out again"
    for pos in (0, 2, 3):
        t.acknowledge(slot, pos)
    assert t.collect(now_ms=1) == {("t", 0)}
    assert rid(0) in t.ledgers[("t", 0)] and rid(2) in t.ledgers[("t", 0)]
    assert rid(1) not in t.ledgers[("t", 0)], "released, not acknowledged"
    assert t.last_acked_ts[slot] == 100, "the timestamp stops before the released record"
    t.acknowledge(slot, 4)
    t.collect(now_ms=2)
    assert rid(1) in t.ledgers[("t", 0)] and t.outstanding(slot) == 0


def test_the_newest_origin_follows_the_acknowledged_prefix_only() -> None:
    """Copies carry where they came from; the origin reported is that of the newest copy with
    every record before it acknowledged (what a start position on the origin may rely on)."""
    t, slot = AckTracker(), ("t", 0)
    for position, origin in enumerate(["b:1", None, "b:2", None, "b:3"]):
        assert t.offer("t", slot, position, rid(position), 100, origin=origin)
    for position in (0, 1, 2, 4):  # position 3 still handed out
        t.acknowledge(slot, position)
    t.collect(now_ms=1)
    assert t.last_acked_origin == {slot: "b:2"}, "b:3 lies after the unacknowledged record 3"
    t.acknowledge(slot, 3)
    t.collect(now_ms=2)
    # b:3 was acknowledged beyond the gap and not kept: reporting b:2 is the conservative answer.
    assert t.last_acked_origin == {slot: "b:2"}
    assert t.offer("t", slot, 5, rid(5), 100, origin="b:4")
    t.acknowledge(slot, 5)
    t.collect(now_ms=3)
    assert t.last_acked_origin == {slot: "b:4"}
    t.reset()
    assert t.last_acked_origin == {}


def test_a_record_given_back_stops_reporting_an_origin_for_its_slot() -> None:
    """A negatively acknowledged record comes again later: the prefix no longer proves that
    everything before a copy was processed."""
    t, slot = AckTracker(), ("t", 0)
    assert t.offer("t", slot, 0, rid(0), 100, origin="b:1")
    t.acknowledge(slot, 0)
    t.collect(now_ms=1)
    assert t.last_acked_origin == {slot: "b:1"}
    assert t.offer("t", slot, 1, rid(1), 100)
    t.release(slot, 1)
    assert t.last_acked_origin == {}
    assert t.offer("t", slot, 2, rid(2), 100, origin="b:2")
    assert t.offer("t", slot, 3, rid(1), 100)  # the record given back, again
    for position in (2, 3):
        t.acknowledge(slot, position)
    t.collect(now_ms=2)
    assert t.last_acked_origin == {}


def test_settled_through_needs_every_earlier_record_acknowledged_and_none_given_back() -> None:
    t = AckTracker()
    slot = ("t", 0)
    assert not t.settled_through(slot, 0), "nothing delivered from the slot"
    for pos in range(4):
        assert t.offer("t", slot, pos, rid(pos), 0)
    assert not t.offer("t", slot, 4, rid(0), 0), "filtered (in flight)"
    for pos in (0, 1, 3, 4):
        t.acknowledge(slot, pos)
    t.collect(now_ms=1)
    assert t.settled_through(slot, 1)
    assert not t.settled_through(slot, 3), "position 2 is still handed out"
    t.acknowledge(slot, 2)
    t.collect(now_ms=2)
    assert t.settled_through(slot, 4)
    assert t.offer("t", slot, 5, rid(5), 0)
    t.release(slot, 5)
    assert not t.settled_through(slot, 4), "a record given back comes again later: no prefix holds"
