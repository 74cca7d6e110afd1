"""A set of non-negative integers kept as sorted, disjoint, half-open ranges.

Sequences acknowledged in order collapse to one range; out-of-order acknowledgements add a
few. Membership is a binary search (``bisect``, in C), adding is a binary search plus a slice
replacement.

Serialized form: ``count`` then, per range, ``start - previous end`` and ``end - start``,
all unsigned LEB128 varints — a range costs 2 to 6 bytes when ranges are close together.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from hotstandby.errors import FormatError
from hotstandby.failover.identity import read_uvarint, write_uvarint

__all__ = ["RangeSet"]


class RangeSet:
    __slots__ = ("_ends", "_starts")
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for start, end in ranges:
            self.add_range(start, end)

    # -- reading --------------------------------------------------------------------------

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        i = bisect_right(self._starts, value) - 1
        return i >= 0 and value < self._ends[i]

    def __len__(self) -> int:
        """How many integers the set holds."""
        return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """The ranges, ascending, as ``(start, end)`` with ``end`` excluded."""
        return zip(self._starts, self._ends, strict=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RangeSet) and self._starts == other._starts and self._ends == other._ends

    def __repr__(self) -> str:
        return f"RangeSet({list(self)})"

    @property
    def range_count(self) -> int:
        return len(self._starts)

    def contiguous_end(self, start: int = 0) -> int:
        """The first integer >= ``start`` not in the set."""
        i = bisect_right(self._starts, start) - 1
        return self._ends[i] if i >= 0 and start < self._ends[i] else start

    # -- writing --------------------------------------------------------------------------

    def add(self, value: int) -> None:
        self.add_range(value, value + 1)

    def add_range(self, start: int, end: int) -> None:
        """Add ``[start, end)``, merging with overlapping or adjacent ranges."""
        if start < 0 or end < start:
            raise ValueError(f"bad range [{start}, {end})")
        if start == end:
            return
        starts, ends = self._starts, self._ends
        if ends and ends[-1] == start:  # the in-order case: extend the last range
            ends[-1] = end
            return
        i = bisect_left(ends, start)  # first range ending at or after start (touching counts)
        j = bisect_right(starts, end)  # ranges starting at or before end (touching counts)
        if i == j:
            starts.insert(i, start)
            ends.insert(i, end)
            return
        starts[i:j] = [min(start, starts[i])]
        ends[i:j] = [max(end, ends[j - 1])]

    def update(self, other: RangeSet) -> None:
        for start, end in other:
            self.add_range(start, end)

    def union(self, other: RangeSet) -> RangeSet:
        out = self.copy()
        out.update(other)
        return out

    def copy(self) -> RangeSet:
        out = RangeSet()
        out._starts, out._ends = list(self._starts), list(self._ends)
        return out

    # -- bytes ----------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        parts = [write_uvarint(len(self._starts))]
        previous_end = 0
        for start, end in self:
            parts.append(write_uvarint(start - previous_end))
            parts.append(write_uvarint(end - start))
            previous_end = end
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> RangeSet:
        count, pos = read_uvarint(data, 0, "range set")
        out = cls()
        previous_end = 0
        for _ in range(count):
            gap, pos = read_uvarint(data, pos, "range set gap")
            length, pos = read_uvarint(data, pos, "range set length")
            start = previous_end + gap
            if length == 0 or (out._starts and gap == 0):
                raise FormatError("range set: empty or touching ranges are not canonical")
            out._starts.append(start)
            out._ends.append(start + length)
            previous_end = start + length
        if pos != len(data):
            raise FormatError(f"range set: {len(data) - pos} unexpected trailing bytes")
        return out
