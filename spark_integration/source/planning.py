"""Planning a batch: which offsets of which partitions, in how many Spark tasks.

Pure functions of their arguments (the driver calls them with two offsets; a replayed batch
gets the same plan).

* :func:`batch_ranges` — the offset ranges between two :class:`SourceOffset`\\ s.
* :func:`cap` — Spark's ``maxOffsetsPerTrigger`` rule: the limit shared among partitions in
  proportion to what each has waiting (at least one record where something waits).
* :func:`plan_tasks` — one task per *logical* partition, reading the topic and every remote
  copy of it, so a record that is there twice (a copy and a producer's re-send after a switch)
  is met by one task and emitted once. ``minPartitions`` splits a logical partition whose
  records this batch sit in one physical partition into consecutive offset ranges, in
  proportion to its share of the batch, as Spark's Kafka source does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hotstandby.spark_integration.source.offsets import SourceOffset

__all__ = ["Range", "Slot", "Task", "batch_ranges", "cap", "plan_tasks", "rebuilt", "recreated"]

Slot = tuple[str, int]  # (physical topic, partition)


@dataclass(frozen=True)
class Range:
    """Offsets ``[start, end)`` of one physical partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


@dataclass(frozen=True)
class Task:
    """What one Spark task reads: ranges of one logical partition, in this order."""

    logical: str
    partition: int
    ranges: tuple[Range, ...]

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)


def batch_ranges(start: SourceOffset | None, end: SourceOffset) -> list[Range]:
    """The non-empty ranges from ``start`` to ``end``. A partition starts where ``end.starts``
    says, else where ``start`` left it on the same cluster, else at 0."""
    same_cluster = start is not None and start.cluster == end.cluster
    out: list[Range] = []
    for topic in sorted(end.positions):
        for partition in sorted(end.positions[topic]):
            stop = end.positions[topic][partition]
            begin = end.starts.get(topic, {}).get(partition)
            if begin is None and same_cluster:
                assert start is not None
                begin = start.positions.get(topic, {}).get(partition)
            begin = 0 if begin is None else begin
            if stop > begin:
                out.append(Range(topic, partition, begin, stop))
    return out


def rebuilt(begin: Mapping[Slot, int], marks: Mapping[Slot, tuple[int, int]]) -> dict[Slot, int]:
    """The partitions whose log ends before the position reached there — the cluster came back
    empty, or lost a tail — with their first offset: read again from there (the ledger drops what
    was emitted), since their offsets now name other records and nothing there may be skipped."""
    return {slot: marks[slot][0] for slot, at in begin.items() if slot in marks and marks[slot][1] < at}


def recreated(
    begin: Mapping[Slot, int], marks: Mapping[Slot, tuple[int, int]], before: Mapping[str, str], now: Mapping[str, str]
) -> dict[Slot, int]:
    """The partitions of topics whose id changed since ``begin`` was taken (``before``; a topic
    not named there is not judged), with their first offset: the topic was created again, so its
    offsets now name other records; read it again from its start (the ledger drops what was
    emitted)."""
    return {
        slot: marks[slot][0]
        for slot in begin
        if slot in marks and slot[0] in before and slot[0] in now and before[slot[0]] != now[slot[0]]
    }


def cap(begin: Mapping[Slot, int], latest: Mapping[Slot, int], limit: int | None) -> dict[Slot, int]:
    """End positions at most ``limit`` records past ``begin`` in all, shared in proportion to
    what each partition has waiting (Spark's Kafka source rule); ``limit`` None: ``latest``."""
    if limit is None:
        return dict(latest)
    sizes = {slot: max(latest[slot] - begin.get(slot, latest[slot]), 0) for slot in latest}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    out: dict[Slot, int] = {}
    for slot, end in latest.items():
        size = sizes[slot]
        if size == 0:
            out[slot] = end
            continue
        share = limit * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[slot] = min(begin[slot] + step, end)
    return out


def plan_tasks(ranges: list[Range], logical_of: Callable[[str], str], min_partitions: int | None = None) -> list[Task]:
    """Group ``ranges`` into tasks (see the module docs), in a fixed order."""
    grouped: dict[tuple[str, int], list[Range]] = {}
    for r in ranges:
        grouped.setdefault((logical_of(r.topic), r.partition), []).append(r)
    tasks = [
        Task(logical, partition, tuple(sorted(rs, key=lambda r: (r.topic, r.start))))
        for (logical, partition), rs in sorted(grouped.items())
    ]
    if not min_partitions or len(tasks) >= min_partitions:
        return tasks
    total = sum(t.size for t in tasks)
    out: list[Task] = []
    for task in tasks:
        parts = max(1, math.floor(task.size * min_partitions / total)) if total else 1
        if len(task.ranges) != 1 or parts == 1:
            out.append(task)
            continue
        (whole,) = task.ranges
        bounds = [whole.start + whole.size * i // parts for i in range(parts + 1)]
        out.extend(
            Task(task.logical, task.partition, (Range(whole.topic, whole.partition, lo, hi),))
            for lo, hi in itertools.pairwise(bounds)
            if hi > lo
        )
    return out
