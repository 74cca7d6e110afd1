"""A commit of a record covers what its logical partition handed out before it, from every slot.

The consumer hands out a topic and its remote copy (``orders`` and ``kafka-b.orders``) as one
partition: an application committing each partition's last record (as confluent-kafka users
do) acknowledges every record of that partition it was handed before it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker

S = bytes(16)
LOCAL, COPY, OTHER = ("orders", 0), ("kafka-b.orders", 0), ("kafka-b.orders", 1)


def rid(seq: int, partition: int = 0) -> RecordId:
    return RecordId(S, partition, seq)


def _commit(t: AckTracker, slot: tuple[str, int], position: int) -> None:
    """What the Kafka consumer does for ``commit(message=...)`` of a record handed out here."""
    for covered, next_position in {**t.covered_before(slot, position), slot: position + 1}.items():
        t.acknowledge_through(covered, next_position)
    t.collect(now_ms=1)


def test_a_commit_covers_the_copy_records_handed_out_before_it() -> None:
    t = AckTracker()
    assert t.offer("orders", COPY, 10, rid(0), 1)
    assert t.offer("orders", COPY, 11, rid(1), 1)
    assert t.offer("orders", LOCAL, 500, rid(2), 1)
    assert t.offer("orders", COPY, 12, rid(3), 1)  # handed out after the record committed below
    assert t.covered_before(LOCAL, 500) == {COPY: 12}
    _commit(t, LOCAL, 500)
    ledger = t.ledgers[("orders", 0)]
    assert [s for s in range(4) if rid(s) in ledger] == [0, 1, 2]
    assert t.outstanding(COPY) == 1
    # Another partition of the copy is another logical partition: not covered.
    assert t.offer("orders", OTHER, 3, rid(0, 1), 1)
    assert t.offer("orders", LOCAL, 501, rid(4), 1)
    assert t.covered_before(LOCAL, 501) == {COPY: 13}


def test_a_commit_never_takes_a_sibling_back() -> None:
    t = AckTracker()
    t.offer("orders", COPY, 10, rid(0), 1)
    t.offer("orders", LOCAL, 500, rid(1), 1)
    t.offer("orders", COPY, 11, rid(2), 1)
    _commit(t, COPY, 11)  # covers LOCAL 500 too
    assert t.covered_before(LOCAL, 500) == {}  # COPY is acknowledged past 10 already


def test_a_record_left_behind_covers_its_siblings_left_behind() -> None:
    t = AckTracker()
    t.offer("orders", COPY, 10, rid(0), 1)
    t.offer("orders", LOCAL, 500, rid(1), 1)
    t.offer("orders", COPY, 11, rid(2), 1)
    t.reset()  # a switch, nothing acknowledged
    assert t.acknowledge_left_behind(LOCAL, 500, rid(1), 1, now_ms=1) == {("orders", 0)}
    ledger = t.ledgers[("orders", 0)]
    assert [s for s in range(3) if rid(s) in ledger] == [0, 1]


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=80))
def test_committing_the_last_record_acknowledges_every_record_handed_out_before(
    schedule: list[tuple[bool, bool]],
) -> None:
    """Records of two slots handed out interleaved in any order; now and then the application
    commits the last record it was handed: every record handed out until then is acknowledged."""
    t = AckTracker()
    positions = {LOCAL: 0, COPY: 100}
    committed = 0
    for seq, (from_copy, commit) in enumerate(schedule):
        slot = COPY if from_copy else LOCAL
        assert t.offer("orders", slot, positions[slot], rid(seq), 1)
        positions[slot] += 1
        if commit:
            _commit(t, slot, positions[slot] - 1)
            committed = seq + 1
    ledger = t.ledgers.get(("orders", 0))
    acknowledged = [s for s in range(len(schedule)) if ledger is not None and rid(s) in ledger]
    assert acknowledged == list(range(committed))
