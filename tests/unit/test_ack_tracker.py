"""The broker-neutral bookkeeping of what a consumer handed out and what is acknowledged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hotstandby.ack_tracker import AckTracker
from hotstandby.identity import RecordId
from hotstandby.ledger import PartitionLedger

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
