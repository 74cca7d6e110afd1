"""Planning a batch: ranges between two offsets, the per-trigger cap, and Spark tasks."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.planning import Range, Task, batch_ranges, cap, plan_tasks, rebuilt, recreated


def logical_of(topic: str) -> str:
    return topic.removeprefix("kafka-a.")


# --- batch_ranges -------------------------------------------------------------------------------


def test_the_same_cluster_continues_where_the_start_left_off() -> None:
    start = SourceOffset("r", 1, "kafka-a", {"orders": {0: 10, 1: 5}, "payments": {0: 3}})
    end = SourceOffset("r", 1, "kafka-a", {"orders": {0: 15, 1: 5}, "payments": {0: 4}})
    assert batch_ranges(start, end) == [Range("orders", 0, 10, 15), Range("payments", 0, 3, 4)]


def test_starts_override_where_the_start_left_off() -> None:
    start = SourceOffset("r", 1, "kafka-a", {"orders": {0: 10, 1: 20}})
    end = SourceOffset("r", 1, "kafka-a", {"orders": {0: 15, 1: 30}}, starts={"orders": {0: 12}})
    assert batch_ranges(start, end) == [Range("orders", 0, 12, 15), Range("orders", 1, 20, 30)]


def test_a_new_partition_without_a_start_begins_at_zero() -> None:
    start = SourceOffset("r", 1, "kafka-a", {"orders": {0: 10}})
    end = SourceOffset("r", 1, "kafka-a", {"orders": {0: 10, 1: 4}, "new": {0: 2}})
    assert batch_ranges(start, end) == [Range("new", 0, 0, 2), Range("orders", 1, 0, 4)]


def test_the_first_batch_reads_from_starts_or_zero() -> None:
    end = SourceOffset("r", 1, "kafka-a", {"orders": {0: 10, 1: 4}}, starts={"orders": {0: 7}})
    assert batch_ranges(None, end) == [Range("orders", 0, 7, 10), Range("orders", 1, 0, 4)]


def test_a_different_cluster_takes_only_starts() -> None:
    start = SourceOffset("r", 1, "kafka-a", {"orders": {0: 100, 1: 100}})
    end = SourceOffset(
        "r",
        2,
        "kafka-b",
        {"orders": {0: 50, 1: 60}, "kafka-a.orders": {0: 120}},
        {"kafka-a.orders": "orders"},
        starts={"orders": {0: 40}, "kafka-a.orders": {0: 100}},
    )
    assert batch_ranges(start, end) == [
        Range("kafka-a.orders", 0, 100, 120),
        Range("orders", 0, 40, 50),
        Range("orders", 1, 0, 60),  # not 100: that was kafka-a's offset
    ]


def test_empty_and_backward_ranges_are_left_out() -> None:
    start = SourceOffset("r", 1, "c", {"t": {0: 10, 1: 10, 2: 10}})
    end = SourceOffset("r", 1, "c", {"t": {0: 10, 1: 8, 2: 11}}, starts={"u": {0: 5}})
    assert batch_ranges(start, end) == [Range("t", 2, 10, 11)]
    assert batch_ranges(None, SourceOffset("r", 1, "c", {"t": {0: 0}})) == []


def test_range_and_task_sizes() -> None:
    assert Range("t", 0, 3, 10).size == 7 and Range("t", 0, 10, 3).size == 0
    assert Task("t", 0, (Range("t", 0, 0, 4), Range("k.t", 0, 2, 5))).size == 7


# --- cap ----------------------------------------------------------------------------------------

A, B, C = ("t", 0), ("t", 1), ("t", 2)


def test_no_limit_returns_latest() -> None:
    latest = {A: 1000, B: 5}
    got = cap({A: 0, B: 0}, latest, None)
    assert got == latest and got is not latest


def test_a_total_within_the_limit_returns_latest() -> None:
    assert cap({A: 0, B: 10}, {A: 50, B: 60}, 100) == {A: 50, B: 60}
    assert cap({A: 0, B: 10}, {A: 50, B: 60}, 101) == {A: 50, B: 60}


def test_the_limit_is_shared_in_proportion() -> None:
    # waiting 300, 100, 0; limit 100: shares 75, 25, 0
    assert cap({A: 0, B: 1000, C: 7}, {A: 300, B: 1100, C: 7}, 100) == {A: 75, B: 1025, C: 7}


def test_a_share_below_one_rounds_up_and_above_one_floors() -> None:
    # waiting 1000 and 1; limit 10: shares 9.99 -> 9 and 0.00999 -> 1
    assert cap({A: 0, B: 0}, {A: 1000, B: 1}, 10) == {A: 9, B: 1}
    # waiting 7, 7, 7; limit 10: shares 3.33 each -> 3
    assert cap({A: 0, B: 0, C: 0}, {A: 7, B: 7, C: 7}, 10) == {A: 3, B: 3, C: 3}


def test_a_partition_missing_from_begin_keeps_latest() -> None:
    assert cap({A: 0}, {A: 100, B: 50}, 10) == {A: 10, B: 50}


def test_never_beyond_latest() -> None:
    # the round-up can never carry a partition past what it has waiting
    got = cap({A: 0, B: 0}, {A: 10_000, B: 1}, 5)
    assert got == {A: 4, B: 1}
    assert all(got[s] <= end for s, end in {A: 10_000, B: 1}.items())


slots = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=12)


@given(slots, st.one_of(st.none(), st.integers(1, 10**6)))
def test_cap_stays_between_begin_and_latest(pairs: list[tuple[int, int]], limit: int | None) -> None:
    begin = {("t", i): b for i, (b, _) in enumerate(pairs)}
    latest = {("t", i): b + w for i, (b, w) in enumerate(pairs)}
    got = cap(begin, latest, limit)
    assert got.keys() == latest.keys()
    assert all(begin[s] <= got[s] <= latest[s] for s in latest)
    taken = sum(got[s] - begin[s] for s in latest)
    waiting = sum(latest[s] - begin[s] for s in latest)
    if limit is None or waiting <= limit:
        assert got == latest
    else:
        assert taken <= limit + len(latest)
        # every partition with something waiting moves by at least one record
        assert all(got[s] > begin[s] for s in latest if latest[s] > begin[s])


@given(slots, st.integers(1, 10**5))
def test_cap_matches_sparks_rule(pairs: list[tuple[int, int]], limit: int) -> None:
    begin = {("t", i): b for i, (b, _) in enumerate(pairs)}
    latest = {("t", i): b + w for i, (b, w) in enumerate(pairs)}
    total = sum(w for _, w in pairs)
    got = cap(begin, latest, limit)
    for slot in latest:
        size = latest[slot] - begin[slot]
        if total <= limit or size == 0:
            assert got[slot] == latest[slot]
        else:
            share = limit * size / total
            step = math.ceil(share) if share < 1 else math.floor(share)
            assert got[slot] == min(begin[slot] + step, latest[slot])


# --- plan_tasks ---------------------------------------------------------------------------------


def test_one_task_per_logical_partition_with_copies_together() -> None:
    ranges = [
        Range("kafka-a.orders", 0, 100, 120),
        Range("kafka-a.orders", 1, 10, 20),
        Range("orders", 0, 40, 50),
        Range("orders", 2, 0, 5),
        Range("payments", 0, 7, 9),
    ]
    assert plan_tasks(ranges, logical_of) == [
        Task("orders", 0, (Range("kafka-a.orders", 0, 100, 120), Range("orders", 0, 40, 50))),
        Task("orders", 1, (Range("kafka-a.orders", 1, 10, 20),)),
        Task("orders", 2, (Range("orders", 2, 0, 5),)),
        Task("payments", 0, (Range("payments", 0, 7, 9),)),
    ]


def test_the_plan_is_deterministic_whatever_the_input_order() -> None:
    ranges = [Range(t, p, 0, 10 + p) for t in ("orders", "kafka-a.orders", "b", "a") for p in (3, 0, 11, 2)]
    first = plan_tasks(ranges, logical_of)
    assert plan_tasks(list(ranges), logical_of) == first
    keys = [(t.logical, t.partition) for t in first]
    assert keys == sorted(keys) and len(keys) == len(set(keys)) == 12
    shuffled = list(ranges)
    random.Random(7).shuffle(shuffled)
    assert [(t.logical, t.partition) for t in plan_tasks(shuffled, logical_of)] == keys


def test_enough_tasks_are_not_split() -> None:
    ranges = [Range("a", 0, 0, 1000), Range("b", 0, 0, 1)]
    assert plan_tasks(ranges, logical_of, 2) == plan_tasks(ranges, logical_of) == plan_tasks(ranges, logical_of, 0)


def test_min_partitions_splits_a_single_range_into_consecutive_ranges() -> None:
    got = plan_tasks([Range("orders", 3, 10, 20)], logical_of, 4)
    assert got == [
        Task("orders", 3, (Range("orders", 3, 10, 12),)),
        Task("orders", 3, (Range("orders", 3, 12, 15),)),
        Task("orders", 3, (Range("orders", 3, 15, 17),)),
        Task("orders", 3, (Range("orders", 3, 17, 20),)),
    ]


def test_min_partitions_splits_in_proportion_to_size() -> None:
    got = plan_tasks([Range("a", 0, 0, 900), Range("b", 0, 0, 100)], logical_of, 10)
    assert [(t.logical, t.ranges[0].start, t.ranges[0].end) for t in got] == [
        ("a", 0, 100),
        ("a", 100, 200),
        ("a", 200, 300),
        ("a", 300, 400),
        ("a", 400, 500),
        ("a", 500, 600),
        ("a", 600, 700),
        ("a", 700, 800),
        ("a", 800, 900),
        ("b", 0, 100),
    ]


def test_a_range_smaller_than_its_share_of_splits_gives_no_empty_task() -> None:
    got = plan_tasks([Range("a", 0, 5, 7)], logical_of, 5)
    assert got == [Task("a", 0, (Range("a", 0, 5, 6),)), Task("a", 0, (Range("a", 0, 6, 7),))]


def test_a_task_with_a_copy_and_the_original_is_never_split() -> None:
    both = [Range("kafka-a.orders", 0, 0, 500), Range("orders", 0, 0, 500)]
    assert plan_tasks(both, logical_of, 8) == [Task("orders", 0, tuple(both))]
    mixed = [*both, Range("payments", 0, 0, 1000)]
    got = plan_tasks(mixed, logical_of, 8)
    assert got[0] == Task("orders", 0, tuple(both))
    assert len(got) == 5 and all(t.logical == "payments" and len(t.ranges) == 1 for t in got[1:])


def _covered(tasks: list[Task]) -> Counter[tuple[str, int, int]]:
    return Counter((r.topic, r.partition, o) for t in tasks for r in t.ranges for o in range(r.start, r.end))


range_lists = st.lists(
    st.tuples(
        st.sampled_from(["orders", "kafka-a.orders", "payments"]),
        st.integers(0, 3),
        st.integers(0, 500),
        st.integers(1, 300),
    ),
    max_size=8,
    unique_by=lambda x: (x[0], x[1]),
).map(lambda xs: [Range(t, p, s, s + n) for t, p, s, n in xs])


@given(range_lists, st.one_of(st.none(), st.integers(1, 40)))
def test_splitting_preserves_the_offsets_covered(ranges: list[Range], min_partitions: int | None) -> None:
    plain = plan_tasks(ranges, logical_of)
    split = plan_tasks(ranges, logical_of, min_partitions)
    assert _covered(split) == _covered(plain) == _covered([Task("", 0, tuple(ranges))])
    assert all(r.end > r.start for t in split for r in t.ranges)
    assert all(logical_of(r.topic) == t.logical and r.partition == t.partition for t in split for r in t.ranges)
    if min_partitions is not None and len(plain) < min_partitions:
        assert len(split) >= len(plain)
    else:
        assert split == plain
    # the pieces of one logical partition follow each other in offset order
    for task in plain:
        pieces = [t for t in split if (t.logical, t.partition) == (task.logical, task.partition)]
        if len(task.ranges) > 1:
            assert pieces == [task]
        else:
            bounds = [(p.ranges[0].start, p.ranges[0].end) for p in pieces]
            assert bounds[0][0] == task.ranges[0].start and bounds[-1][1] == task.ranges[0].end
            assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))


def test_a_partition_whose_log_ends_before_the_position_is_read_again_from_its_start() -> None:
    begin = {("t", 0): 20, ("t", 1): 10, ("t", 2): 5}
    marks = {("t", 0): (0, 15), ("t", 1): (0, 15), ("t", 2): (3, 5)}  # t[0]: a cluster back empty, now 15
    assert rebuilt(begin, marks) == {("t", 0): 0}
    assert rebuilt(begin, {("t", 1): (0, 9)}) == {("t", 1): 0}, "a lost tail"
    assert rebuilt(begin, {}) == {}, "a partition not asked about"


def test_a_topic_created_again_is_read_again_from_its_start_whatever_its_log_holds() -> None:
    begin = {("t", 0): 20, ("t", 1): 10, ("u", 0): 7, ("v", 0): 3}
    marks = {("t", 0): (0, 40), ("t", 1): (2, 40), ("u", 0): (0, 9), ("v", 0): (0, 9)}
    before = {"t": "id-1", "u": "id-2"}
    now = {"t": "id-3", "u": "id-2", "v": "id-4"}  # t created again and grown past 20; v unknown before
    assert recreated(begin, marks, before, now) == {("t", 0): 0, ("t", 1): 2}
    assert recreated(begin, marks, {}, now) == {}, "a checkpoint without ids is not judged"
    assert recreated(begin, marks, before, {"u": "id-2"}) == {}, "a topic the cluster did not describe"
