"""The Spark drill's reading of its sink: one file per batch id, written again when Spark
replays the batch; what a rewrite changes is counted, nothing else."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hotstandby.drill.runner import DrillContext, DrillOptions
from hotstandby.drill.spark import SparkWorkload
from hotstandby.drill.tally import Tally


def _write(sink: Path, batch: int, rows: list[list[object]]) -> None:
    # As the job does: a temporary file, then os.replace (a new inode each time).
    temporary = sink / f".batch-{batch}.json.tmp"
    temporary.write_text(json.dumps({"batch": batch, "rows": rows}))
    os.replace(temporary, sink / f"batch-{batch}.json")


def _workload(tmp_path: Path) -> tuple[SparkWorkload, DrillContext]:
    workload = SparkWorkload("unit")
    workload._dir = tmp_path
    (tmp_path / "sink").mkdir()
    ctx = DrillContext(DrillOptions(), "unit", "/ns", "127.0.0.1:1", time.monotonic() + 60)
    for seq in range(6):
        ctx.tally.delivered(seq, ok=True)
    return workload, ctx


def test_each_row_is_counted_once_and_a_replay_with_the_same_rows_changes_nothing(tmp_path: Path) -> None:
    workload, ctx = _workload(tmp_path)
    sink = tmp_path / "sink"
    _write(sink, 0, [["0", "kafka-a"], ["1", "kafka-a"]])
    _write(sink, 1, [["2", "kafka-a"]])
    (sink / ".batch-2.json.tmp").write_text("{half a fi")  # being written: not read
    workload._scan(ctx)
    assert ctx.tally.counts() == (6, 3)
    workload._scan(ctx)  # nothing new
    _write(sink, 1, [["2", "kafka-a"]])  # Spark replayed batch 1
    workload._scan(ctx)
    assert (ctx.tally.counts(), ctx.tally.duplicated, workload.rewritten, workload.changed_rows) == ((6, 3), 0, 1, 0)


def test_a_replay_that_reads_differently_counts_what_it_adds_and_what_it_drops(tmp_path: Path) -> None:
    workload, ctx = _workload(tmp_path)
    sink = tmp_path / "sink"
    _write(sink, 0, [["0", "kafka-a"], ["1", "kafka-a"]])
    _write(sink, 1, [["2", "kafka-a"], ["3", "kafka-a"]])
    workload._scan(ctx)
    _write(sink, 1, [["0", "kafka-b"], ["2", "kafka-a"], ["4", "kafka-b"]])  # 0 again, 4 new, 3 gone
    workload._scan(ctx)
    tally: Tally = ctx.tally
    assert (tally.duplicated, tally.duplicated_sample) == (1, [0])
    assert tally.lost() == [3, 5]  # 3 is no longer in the sink; 5 never was
    assert (workload.rewritten, workload.changed_rows) == (1, 3)


def test_a_row_dropped_from_one_batch_but_held_by_another_stays_consumed(tmp_path: Path) -> None:
    workload, ctx = _workload(tmp_path)
    sink = tmp_path / "sink"
    _write(sink, 0, [["0", "kafka-a"]])
    _write(sink, 1, [["0", "kafka-b"], ["1", "kafka-b"]])
    workload._scan(ctx)
    assert ctx.tally.duplicated == 1
    _write(sink, 1, [["1", "kafka-b"]])
    workload._scan(ctx)
    assert 0 not in ctx.tally.lost()
