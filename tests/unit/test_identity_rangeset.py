"""hs-id codec and RangeSet algebra."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.errors import FormatError
from hotstandby.failover.identity import IdentityText, RecordId, new_session, write_uvarint
from hotstandby.failover.ledger.rangeset import RangeSet

sessions = st.binary(min_size=16, max_size=16)
naturals = st.integers(min_value=0, max_value=2**63 - 1)


@given(sessions, st.integers(0, 2**31 - 1), naturals)
def test_record_id_roundtrip(session: bytes, partition: int, sequence: int) -> None:
    rid = RecordId(session, partition, sequence)
    assert RecordId.decode(rid.encode()) == rid
    assert RecordId.from_text(rid.text()) == rid


@given(sessions, st.integers(0, 200), st.integers(0, 2**22))
def test_record_id_decode_fast_path_agrees_with_the_general_one(session: bytes, partition: int, sequence: int) -> None:
    # Small values take the unrolled path; a bytearray (and a non-minimal varint) the loop.
    data = RecordId(session, partition, sequence).encode()
    fast, general = RecordId.decode(data), RecordId.decode(bytearray(data))
    assert fast == general == (session, partition, sequence)
    assert type(fast.session) is bytes and type(general.session) is bytes
    padded = data[:17] + bytes((data[17] | 0x80, 0x00)) + data[18:] if partition < 128 else data
    assert RecordId.decode(padded) == fast


@given(sessions, st.integers(0, 2**31 - 1), naturals)
def test_identity_text_is_the_record_ids_text(session: bytes, partition: int, sequence: int) -> None:
    assert IdentityText(session).text(partition, sequence) == RecordId(session, partition, sequence).text()


@pytest.mark.parametrize("partition", [0, 127, 128])
@pytest.mark.parametrize("sequence", [0, 127, 128, 2**14 - 1, 2**14, 2**21 - 1, 2**21])
def test_identity_text_at_the_varint_boundaries(partition: int, sequence: int) -> None:
    session = bytes(range(16))
    assert IdentityText(session).text(partition, sequence) == RecordId(session, partition, sequence).text()


def test_record_id_is_compact_and_versioned() -> None:
    rid = RecordId(bytes(range(16)), 3, 300)
    assert rid.encode() == b"\x01" + bytes(range(16)) + b"\x03" + b"\xac\x02"
    assert len(RecordId(new_session(), 0, 0).encode()) == 19


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "empty"),
        (b"\x02" + bytes(18), "unknown version 2"),
        (b"\x01" + bytes(10), "truncated session"),
        (b"\x01" + bytes(16), "truncated varint"),
        (b"\x01" + bytes(16) + b"\x00\x00\x00", "trailing"),
        (b"\x01" + bytes(16) + b"\x00" + b"\xff" * 10, "longer than 64 bits"),
    ],
)
def test_malformed_record_ids_are_rejected(data: bytes, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        RecordId.decode(data)
    with pytest.raises(FormatError):
        RecordId.from_text("zz")


def model(values: set[int]) -> list[tuple[int, int]]:
    """The canonical ranges of a plain set, for comparison."""
    out: list[tuple[int, int]] = []
    for v in sorted(values):
        if out and out[-1][1] == v:
            out[-1] = (out[-1][0], v + 1)
        else:
            out.append((v, v + 1))
    return out


ranges = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])), max_size=40)


@given(ranges)
def test_rangeset_matches_a_plain_set(pairs: list[tuple[int, int]]) -> None:
    rs, plain = RangeSet(), set()
    for start, end in pairs:
        rs.add_range(start, end)
        plain.update(range(start, end))
    assert list(rs) == model(plain)
    assert len(rs) == len(plain)
    assert all((v in rs) == (v in plain) for v in range(-2, 345))
    assert RangeSet.from_bytes(rs.to_bytes()) == rs


@given(ranges, ranges)
def test_union_is_set_union_and_commutative(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    ra, rb = RangeSet(a), RangeSet(b)
    plain = {v for s, e in a for v in range(s, e)} | {v for s, e in b for v in range(s, e)}
    assert list(ra.union(rb)) == model(plain) == list(rb.union(ra))


def test_in_order_acks_stay_one_range() -> None:
    rs = RangeSet()
    for i in range(10_000):
        rs.add(i)
    assert list(rs) == [(0, 10_000)] and rs.contiguous_end() == 10_000
    rs.add(10_005)
    assert rs.range_count == 2 and rs.contiguous_end() == 10_000 and rs.contiguous_end(10_005) == 10_006


@pytest.mark.parametrize("data", [b"\x01\x00\x00", b"\x02\x00\x01\x00\x01", b"\x01\x00\x01\xff"])
def test_non_canonical_or_malformed_bytes_are_rejected(data: bytes) -> None:
    with pytest.raises(FormatError):
        RangeSet.from_bytes(data)


def test_bad_ranges() -> None:
    with pytest.raises(ValueError):
        RangeSet().add_range(5, 4)
    with pytest.raises(ValueError):
        RangeSet().add(-1)
    assert "x" not in RangeSet([(0, 5)])


@given(
    sessions,
    st.integers(0, 200),
    st.integers(0, 2**30) | st.sampled_from([127, 128, 2**14 - 1, 2**14, 2**21 - 1, 2**21, 2**28 - 1, 2**28]),
)
def test_record_id_encode_fast_path_writes_what_the_general_writer_does(
    session: bytes, partition: int, sequence: int
) -> None:
    expected = b"\x01" + session + write_uvarint(partition) + write_uvarint(sequence)
    assert RecordId(session, partition, sequence).encode() == expected
