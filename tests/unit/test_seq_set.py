"""The drill's bitmap of sequence numbers against Python's set."""

from __future__ import annotations

import random

import pytest

from hotstandby.drill.seq_set import SeqSet


def test_it_behaves_as_a_set_of_the_same_numbers() -> None:
    rnd = random.Random(7)
    ours, theirs = SeqSet(), set()
    for _ in range(5000):
        seq = rnd.randrange(3000)
        if rnd.random() < 0.7:
            assert ours.add(seq) == (seq not in theirs)
            theirs.add(seq)
        else:
            assert ours.discard(seq) == (seq in theirs)
            theirs.discard(seq)
        assert len(ours) == len(theirs)
    assert list(ours) == sorted(theirs)
    assert ours == theirs and all(seq in ours for seq in theirs) and 3001 not in ours and -1 not in ours


def test_intersection_and_difference() -> None:
    a, b = SeqSet(range(0, 100, 2)), SeqSet(range(0, 100, 3))
    assert list(a & b) == list(range(0, 100, 6))
    assert list(a - b) == sorted(set(range(0, 100, 2)) - set(range(0, 100, 3)))
    assert len(a - b) == len(set(range(0, 100, 2)) - set(range(0, 100, 3)))
    assert list(SeqSet() - a) == [] and len(a & SeqSet()) == 0


def test_a_million_numbers_cost_a_bit_each() -> None:
    s = SeqSet()
    s.add(999_999)
    assert len(s._bits) <= 2 * 125_000  # doubling: at most twice what the largest needs
    with pytest.raises(ValueError):
        s.add(-1)
