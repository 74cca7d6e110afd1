"""A ledger filter over Spark's own Kafka source, for bench/spark_reader.py: what the JVM
connector reading planned ranges, then one vectorized step dropping acknowledged records, would
cost. ``mapInArrow`` gets Arrow batches of Spark's Kafka columns (``includeHeaders``); per batch
the ``hs-id`` headers are found with Arrow compute, each identity is decoded and looked up in the
ledger and in what the task kept already, and the batch is filtered by one mask.

Imported by Spark's Python workers (the benchmark puts this folder on their ``PYTHONPATH``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotstandby.failover.identity import HEADER, RecordId


def ledger_filter(acknowledged: frozenset[RecordId]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function dropping records whose identity ``acknowledged`` holds or that
    the task passed already (a re-sent twin in the same range)."""

    def drop(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        seen: set[RecordId] = set()
        for batch in batches:
            headers = batch.column(batch.schema.get_field_index("headers"))
            rows = pc.list_parent_indices(headers).to_numpy()
            pairs = pc.list_flatten(headers)
            is_id = pc.equal(pairs.field("key"), HEADER).to_numpy(zero_copy_only=False)
            keep = np.ones(batch.num_rows, dtype=bool)
            ids = pairs.field("value").filter(pa.array(is_id)).to_pylist()
            for row, raw in zip(rows[is_id], ids, strict=True):
                rid = RecordId.decode(raw)
                if rid in acknowledged or rid in seen:
                    keep[row] = False
                else:
                    seen.add(rid)
            yield batch.filter(pa.array(keep))

    return drop
