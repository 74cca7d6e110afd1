"""The order a task emitted its records in, kept compactly as runs of contiguous sequences.

A batch task's rows feed writers that name each row by its position in the task's output (the
failover-aware sink). When a task runs again over a cluster that lost the batch's records (a
cluster rebuilt empty, a topic created again) it reads their copies on another cluster, where
topics and re-sent records may come in another order; it then puts the rows back in the order
the first run emitted them, so each row keeps its position.

A producer session's sequences are contiguous per partition, so one producer's records in
offset order make one run; runs change only where producers interleave or a range ends. An
order of more than :data:`MAX_RUNS` runs is not kept (:meth:`EmissionOrder.add` gives up).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from hotstandby.errors import ValidationError
from hotstandby.failover.identity import RecordId

__all__ = ["MAX_RUNS", "EmissionOrder"]

#: Runs kept at most (about 60 bytes each when stored); beyond it the order is not kept.
MAX_RUNS = 2000


class EmissionOrder:
    """Runs ``[session, first sequence, last sequence]`` in the order they were emitted."""

    def __init__(self, runs: Iterable[tuple[bytes, int, int]] = ()) -> None:
        self._runs: list[list[Any]] | None = [[s, a, b] for s, a, b in runs]
        self._index: dict[bytes, tuple[list[int], list[tuple[int, int]]]] | None = None

    @property
    def kept(self) -> bool:
        """False once the order grew past :data:`MAX_RUNS` runs."""
        return self._runs is not None

    @property
    def runs(self) -> list[tuple[bytes, int, int]]:
        return [] if self._runs is None else [(s, a, b) for s, a, b in self._runs]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmissionOrder) and self.kept == other.kept and self.runs == other.runs

    __hash__ = None  # type: ignore[assignment]  # mutable

    def add(self, rid: RecordId) -> None:
        """``rid`` was emitted next (called per record: kept cheap)."""
        runs = self._runs
        if runs is None:
            return
        if runs:
            last = runs[-1]
            if last[0] == rid.session and last[2] + 1 == rid.sequence:
                last[2] = rid.sequence
                return
        if len(runs) >= MAX_RUNS:
            self._runs = None
            return
        runs.append([rid.session, rid.sequence, rid.sequence])

    def position(self, rid: RecordId) -> int | None:
        """Where ``rid`` was emitted, counted from 0; None when it is not in a run."""
        if self._index is None:
            self._index = {}
            base = 0
            for session, first, last in self._runs or []:
                firsts, spans = self._index.setdefault(session, ([], []))
                firsts.append(first)
                spans.append((last, base))
                base += last - first + 1
            for firsts, spans in self._index.values():  # runs of one session may come in any order
                ordered = sorted(zip(firsts, spans, strict=True))
                firsts[:] = [f for f, _ in ordered]
                spans[:] = [s for _, s in ordered]
        found = self._index.get(rid.session)
        if found is None:
            return None
        firsts, spans = found
        i = bisect.bisect_right(firsts, rid.sequence) - 1
        if i < 0 or rid.sequence > spans[i][0]:
            return None
        return spans[i][1] + rid.sequence - firsts[i]

    def to_json(self) -> list[list[Any]]:
        return [[s.hex(), a, b] for s, a, b in self.runs]

    @classmethod
    def from_json(cls, doc: Any, what: str) -> EmissionOrder:
        if not isinstance(doc, list):
            raise ValidationError(what, "'order' must be a list of [session, first, last]")
        try:
            runs = [(bytes.fromhex(s), int(a), int(b)) for s, a, b in doc]
        except (TypeError, ValueError):
            raise ValidationError(what, "'order' must be a list of [session, first, last]") from None
        if any(a > b or a < 0 for _, a, b in runs):
            raise ValidationError(what, "'order' runs must have first <= last")
        return cls(runs)
