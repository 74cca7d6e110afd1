"""The Kafka producer's quiet path, pure logic: which records carry a report (markers), what a
marker's success acknowledges and where those records can lie, records timed out for their
callbacks, and what a span means to the checks of a switch (no processes)."""

from __future__ import annotations

from hotstandby.adapters.kafka.producer.expiry import Expiry
from hotstandby.adapters.kafka.producer.quiet import QuietRuns, quiet_allowed
from hotstandby.adapters.kafka.producer.state import Record
from hotstandby.failover.outbox import Outbox, Stored


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def record(seq: int, partition: int = 0, report: object = None) -> Record:
    return Record("t", partition, None, b"v", (), 1, seq, report, 1)  # type: ignore[arg-type]


def sent(runs: QuietRuns, records: list[Record]) -> list[int]:
    """Hand ``records`` over as the producer does; the sequences that carried a report."""
    markers = []
    for r in records:
        marker = runs.marker((r.topic, r.partition))
        runs.add(r, marker)
        if marker:
            markers.append(r.sequence)
    return markers


def test_a_marker_every_nth_record_of_a_partition_and_the_first_of_each() -> None:
    clock = Clock()
    runs = QuietRuns(every=4, interval_s=60, clock=clock)
    assert sent(runs, [record(i) for i in range(10)]) == [0, 4, 8]
    assert sent(runs, [record(i, partition=1) for i in range(3)]) == [0], "a partition's first record reports"
    assert runs.waiting == 13


def test_a_slow_partition_reports_every_record() -> None:
    clock = Clock()
    runs = QuietRuns(every=100, interval_s=0.05, clock=clock)
    markers = []
    for i in range(5):
        markers += sent(runs, [record(i)])
        clock.now += 0.06
    assert markers == [0, 1, 2, 3, 4]


def test_a_marker_acknowledges_its_run_up_to_it_between_the_previous_marker_and_itself() -> None:
    runs = QuietRuns(every=4, interval_s=60, clock=Clock())
    records = [record(i) for i in range(10)]
    sent(runs, records)
    first, low = runs.through(records[4], offset=40)
    assert [r.sequence for r in first] == [0, 1, 2, 3, 4] and low == 0, "nothing before: from the start"
    second, low = runs.through(records[8], offset=57)
    assert [r.sequence for r in second] == [5, 6, 7, 8] and low == 41, "after the previous marker's offset"
    assert runs.waiting == 1
    assert [r.sequence for r in runs.rest()] == [9] and runs.waiting == 0


def test_a_cleared_run_is_not_acknowledged_by_a_late_marker() -> None:
    runs = QuietRuns(every=2, interval_s=60, clock=Clock())
    records = [record(i) for i in range(3)]
    sent(runs, records)
    runs.clear()  # a switch: the records are sent again, each with a report
    assert runs.through(records[2], offset=9) == ([], 9)


def test_only_a_producer_without_default_callback_or_transactions_and_with_idempotence_goes_quiet() -> None:
    assert quiet_allowed({}, has_default_callback=False)
    assert quiet_allowed({"enable.idempotence": True}, has_default_callback=False)
    assert not quiet_allowed({}, has_default_callback=True)
    assert not quiet_allowed({"transactional.id": "t"}, has_default_callback=False)
    assert not quiet_allowed({"enable.idempotence": False}, has_default_callback=False)
    assert not quiet_allowed({"enable.idempotence": "false"}, has_default_callback=False)
    assert not quiet_allowed({"enable.gapless.guarantee": False}, has_default_callback=False)


def test_records_past_the_timeout_and_not_reported_expire_in_order_once() -> None:
    clock = Clock()
    expiry = Expiry(1000, clock=clock)
    a, b, c = record(0, report=print), record(1, report=print), record(2, report=print)
    expiry.watch(a)
    expiry.watch(b)
    clock.now += 0.5
    expiry.watch(c)
    b.reported = True  # acknowledged in time
    assert not expiry.due()
    clock.now += 0.6
    assert expiry.due() and expiry.expired() == [a], "b was reported; c is not due yet"
    clock.now += 0.5
    assert expiry.expired() == [c] and expiry.expired() == []


def test_reported_records_are_let_go_as_new_ones_come() -> None:
    expiry = Expiry(1000, clock=Clock())
    for i in range(1000):
        r = record(i, report=print)
        expiry.watch(r)
        r.reported = True
    assert len(expiry._due) == 1, "only the newest, reported after it was watched"


def test_a_span_is_the_range_a_record_can_lie_in_for_a_switch_back() -> None:
    box: Outbox[tuple[str, int, int], str] = Outbox(60_000, 1 << 20, clock=Clock())
    for seq, stored in enumerate([Stored("a", "t", 0, 57, 1, span=16), Stored("a", "t", 0, 60, 1)]):
        box.add(("t", 0, seq), f"r{seq}")
        box.acknowledged(("t", 0, seq), 1, stored)
    box.replay()  # a switch away: both re-sent; stored on "a" before
    for seq in range(2):
        box.acknowledged(("t", 0, seq), 1, Stored("b", "t", 0, seq, 2))
    assert box.stored_on("a") == {("t", 0): (41, 60)}, "the lowest offset the first record can have"
    assert Stored("a", "t", 0, 57, 1, span=16).lowest == 41
