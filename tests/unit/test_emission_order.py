"""The order a task emitted its records in, kept as runs (pure logic) and staged with them."""

from __future__ import annotations

import random

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.errors import ValidationError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.emission_order import MAX_RUNS, EmissionOrder
from hotstandby.failover.ledger.staged import StagedAcks, StagedPart

S1, S2 = b"\x01" * 16, b"\x02" * 16


def ids(session: bytes, sequences: range) -> list[RecordId]:
    return [RecordId(session, 0, s) for s in sequences]


def test_one_producer_in_offset_order_is_one_run() -> None:
    order = EmissionOrder()
    for r in ids(S1, range(5, 500)):
        order.add(r)
    assert order.runs == [(S1, 5, 499)]


def test_positions_give_back_the_emitted_order_whatever_order_the_records_come_in() -> None:
    # Two origins (a copy range, then the topic), a re-sent stretch, another producer between.
    emitted = ids(S2, range(100, 130)) + ids(S1, range(0, 40)) + ids(S2, range(10, 20)) + ids(S1, range(40, 45))
    order = EmissionOrder()
    for r in emitted:
        order.add(r)
    assert len(order.runs) == 4
    shuffled = emitted[:]
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=lambda r: order.position(r) or 0) == emitted
    assert [order.position(r) for r in emitted] == list(range(len(emitted)))


def test_a_record_the_task_did_not_emit_has_no_position() -> None:
    order = EmissionOrder(ids_runs := [(S1, 10, 20), (S1, 30, 31)])
    assert order.runs == ids_runs
    assert order.position(RecordId(S1, 0, 25)) is None
    assert order.position(RecordId(S1, 0, 9)) is None
    assert order.position(RecordId(S2, 0, 10)) is None
    assert order.position(RecordId(S1, 0, 31)) == 12


def test_an_order_of_too_many_runs_is_not_kept() -> None:
    order = EmissionOrder()
    for s in range(0, 2 * (MAX_RUNS + 1), 2):  # every other sequence: one run each
        order.add(RecordId(S1, 0, s))
    assert not order.kept
    assert order.runs == []
    assert StagedPart.of("t", 0, [RecordId(S1, 0, 1)], order=order).order is None


def test_a_staged_part_keeps_its_order_through_the_config_center() -> None:
    center = ConfigCenter(MemoryStore(), "/t")
    acks = StagedAcks(center, "g")
    emitted = ids(S2, range(3)) + ids(S1, range(7))
    order = EmissionOrder()
    for r in emitted:
        order.add(r)
    acks.stage("b1", 2, StagedPart.of("orders", 1, emitted, order=order))
    found = acks.part("b1", "orders", 1, 2)
    assert found is not None and found.order == order
    assert acks.part("b1", "orders", 1, 3) is None
    assert len(found.ledger) == len(emitted)


@pytest.mark.parametrize("doc", [{"x": 1}, [["zz", 1, 2]], [["01", 5, 2]], [["01", 1]]])
def test_a_malformed_order_is_refused(doc: object) -> None:
    with pytest.raises(ValidationError):
        EmissionOrder.from_json(doc, "k")
