"""A set of a drill's sequence numbers, as a bitmap.

A drill numbers its records 0, 1, 2, ...; its tally keeps which were produced, failed and
consumed. As Python sets those cost about 60 bytes a record, so an hour-long soak's tally
would grow by tens of megabytes and hide what the SDK itself does with memory. A bit per
number up to the largest costs 125 KB per million records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["SeqSet"]


class SeqSet:
    """Non-negative integers, one bit each; the operations of a set a tally needs."""

    __slots__ = ("_bits", "_len")

    def __init__(self, seqs: Iterable[int] = ()) -> None:
        self._bits = bytearray()
        self._len = 0
        self.update(seqs)

    @classmethod
    def _of(cls, value: int) -> SeqSet:
        out = cls()
        out._bits = bytearray(value.to_bytes((value.bit_length() + 7) // 8, "little"))
        out._len = value.bit_count()
        return out

    def _int(self) -> int:
        return int.from_bytes(self._bits, "little")

    def add(self, seq: int) -> bool:
        """Add ``seq``; True when it was not there."""
        if seq < 0:
            raise ValueError(f"a sequence number is not negative: {seq}")
        byte, bit = divmod(seq, 8)
        if byte >= len(self._bits):
            self._bits.extend(bytes(max(byte + 1 - len(self._bits), len(self._bits))))  # amortised doubling
        if self._bits[byte] >> bit & 1:
            return False
        self._bits[byte] |= 1 << bit
        self._len += 1
        return True

    def discard(self, seq: int) -> bool:
        """Remove ``seq``; True when it was there."""
        if seq not in self:
            return False
        byte, bit = divmod(seq, 8)
        self._bits[byte] &= ~(1 << bit) & 0xFF
        self._len -= 1
        return True

    def update(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self.add(seq)

    def difference_update(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self.discard(seq)

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int) or seq < 0:
            return False
        byte, bit = divmod(seq, 8)
        return byte < len(self._bits) and bool(self._bits[byte] >> bit & 1)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        for byte, value in enumerate(self._bits):
            if value:
                for bit in range(8):
                    if value >> bit & 1:
                        yield byte * 8 + bit

    def __and__(self, other: SeqSet) -> SeqSet:
        return SeqSet._of(self._int() & other._int())

    def __sub__(self, other: SeqSet) -> SeqSet:
        return SeqSet._of(self._int() & ~other._int())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SeqSet):
            return self._int() == other._int()
        if isinstance(other, (set, frozenset)):
            return len(other) == self._len and all(seq in self for seq in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a set

    def __repr__(self) -> str:
        return f"SeqSet({len(self)} numbers)"
