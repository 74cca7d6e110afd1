"""A ledger filter over Spark's own Kafka source, for bench/spark_reader.py: what the JVM
connector reading planned ranges, then one vectorized step dropping acknowledged records, would
cost. ``mapInArrow`` gets Arrow batches of Spark's Kafka columns (``includeHeaders``).

:func:`ledger_filter` works per batch, not per record: the ``hs-id`` headers are found with Arrow
compute, the identities' fixed parts (session, partition) and their sequence varints (up to
three bytes: what producers write below 2**21) are decoded with numpy over the batch's bytes,
each session's sequences are looked up in the ledger's ranges with ``searchsorted``, and what
the task passed already is checked with ``isin`` over one int64 per identity (a number per
session, the partition, the sequence below 2**40). Identities of another shape go the per-record
way (:meth:`RecordId.decode`).

Imported by Spark's Python workers (the benchmark puts this folder on their ``PYTHONPATH``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotstandby.failover.identity import HEADER, RecordId

Filter = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
#: A ledger: per producer session, the acknowledged sequences as sorted, disjoint, inclusive
#: (first, last) ranges (per partition in the SDK; one partition here).
Ranges = Mapping[bytes, list[tuple[int, int]]]

_KEY = np.dtype([("session", "V16"), ("partition", "u1"), ("sequence", "<i8")])


def _ids(batch: pa.RecordBatch) -> tuple[np.ndarray, pa.BinaryArray]:
    """Each ``hs-id`` header of ``batch``: its row, and its bytes."""
    headers = batch.column(batch.schema.get_field_index("headers"))
    rows = pc.list_parent_indices(headers).to_numpy()
    pairs = pc.list_flatten(headers)
    is_id = pc.equal(pairs.field("key"), HEADER).fill_null(False)
    return rows[is_id.to_numpy(zero_copy_only=False)], pairs.field("value").filter(is_id)


def _decoded(values: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """Keys (:data:`_KEY`) of identities, and which of them the vectorized decoding read (the
    others are left to :meth:`RecordId.decode`)."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)
    start, size = offsets[:-1], np.diff(offsets)
    ok = (size >= 19) & (size <= 21)
    start = np.where(ok, start, 0)
    ok &= (data[start] == 1) & (data[start + 17] < 0x80)
    last = np.minimum(size - 1, 20) + start
    b = [data[np.minimum(start + 18 + i, last)].astype(np.int64) for i in range(3)]
    sequence = np.select([size == 19, size == 20, size == 21],
                         [b[0], (b[0] & 0x7F) | b[1] << 7, (b[0] & 0x7F) | (b[1] & 0x7F) << 7 | b[2] << 14])  # fmt: skip
    keys = np.zeros(len(values), dtype=_KEY)
    keys["session"] = data[start[:, None] + 1 + np.arange(16)].view("V16").ravel()
    keys["partition"] = data[start + 17]
    keys["sequence"] = sequence
    return keys, ok


def _acknowledged(numbers: np.ndarray, sequences: np.ndarray, ranges: Ranges, sessions: dict[bytes, int]) -> np.ndarray:
    """Whether each identity (its session's number, its sequence) is in ``ranges``."""
    out = np.zeros(len(numbers), dtype=bool)
    by_number = {n: session for session, n in sessions.items()}
    for number in np.unique(numbers):
        spans = ranges.get(by_number[int(number)])
        if not spans:
            continue
        mine = numbers == number
        firsts = np.array([f for f, _ in spans])
        lasts = np.array([last for _, last in spans])
        seq = sequences[mine]
        at = np.searchsorted(firsts, seq, side="right") - 1
        out[mine] = (at >= 0) & (seq <= lasts[np.maximum(at, 0)])
    return out


def _session_numbers(column: np.ndarray, sessions: dict[bytes, int]) -> np.ndarray:
    """Each row's session as a small number (``sessions`` numbers them as they come): grouped by
    the first eight bytes as integers (a 16-byte sort is slow), the rest checked per row."""
    halves = np.ascontiguousarray(column).view(np.uint64).reshape(-1, 2)
    _, first, index = np.unique(halves[:, 0], return_index=True, return_inverse=True)
    if not np.array_equal(halves[:, 1], halves[first[index], 1]):
        return _exact(column, sessions)  # two sessions share their first eight bytes
    number = np.array([sessions.setdefault(bytes(column[i]), len(sessions)) for i in first], dtype=np.int64)
    return number[index]


def _exact(column: np.ndarray, sessions: dict[bytes, int]) -> np.ndarray:
    found, index = np.unique(column, return_inverse=True)
    return np.array([sessions.setdefault(bytes(v), len(sessions)) for v in found], dtype=np.int64)[index]


def ledger_filter(ranges: Ranges) -> Filter:
    """The ``mapInArrow`` function dropping records whose identity ``ranges`` holds or that the
    task passed already (a re-sent twin in the same range), vectorized (see the module doc)."""

    def drop(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sessions: dict[bytes, int] = {}  # a number per session: keys become one int64 each
        seen = np.zeros(0, dtype=np.int64)
        for batch in batches:
            rows, values = _ids(batch)
            keys, ok = _decoded(values)
            for i in np.flatnonzero(~ok):  # another shape: decoded one by one
                rid = RecordId.decode(values[int(i)].as_py())
                keys[i] = (rid.session, rid.partition, rid.sequence)
            numbers = _session_numbers(keys["session"], sessions)
            flat = numbers << 48 | keys["partition"].astype(np.int64) << 40 | keys["sequence"]
            dropped = _acknowledged(numbers, keys["sequence"], ranges, sessions) | np.isin(flat, seen)
            unique, first = np.unique(flat, return_index=True)
            again = np.ones(len(flat), dtype=bool)
            again[first] = False  # a twin within the batch: only its first copy stays
            dropped |= again
            keep = np.ones(batch.num_rows, dtype=bool)
            keep[rows[dropped]] = False
            seen = np.sort(np.concatenate([seen, unique[~np.isin(unique, seen)]]))
            yield batch.filter(pa.array(keep))

    return drop
