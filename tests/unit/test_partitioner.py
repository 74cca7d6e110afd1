from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.errors import ValidationError
from hotstandby.failover.partitioner import KEYED, Partitioner, java_string_hash, murmur2


@pytest.mark.parametrize(
    ("data", "expected"),
    [  # Kafka's own test vectors (clients/.../UtilsTest.testMurmur2)
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_keyed_partitioners() -> None:
    assert Partitioner("murmur2").partition("t", b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert Partitioner("crc32").partition("t", b"foobar", 7) == zlib.crc32(b"foobar") % 7
    with pytest.raises(ValidationError, match="unknown partitioner"):
        Partitioner("random")


def test_unkeyed_records_stick_then_move_round_robin() -> None:
    p = Partitioner(sticky_records=3)
    assert [p.partition("t", None, 4) for _ in range(10)] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert p.partition("other", None, 2) == 0


def reference_murmur2(data: bytes) -> int:
    """Java's Utils.murmur2, transcribed step by step."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    for i in range(len(data) // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[len(data) // 4 * 4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


@given(st.binary(max_size=64) | st.binary(min_size=250, max_size=300))  # past the prepared unpackers too
def test_murmur2_agrees_with_the_step_by_step_transcription(data: bytes) -> None:
    assert murmur2(data) == reference_murmur2(data)


def test_java_string_hash_matches_java() -> None:
    # Values of "...".hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: two UTF-16 units
    p = Partitioner("java-string")
    assert p.partition("t", b"polygenelubricants", 7) == 0  # MIN_VALUE & MAX_VALUE == 0
    assert p.partition("t", b"hello", 7) == 99162322 % 7


@pytest.mark.parametrize("keyed", sorted(KEYED))
def test_remembered_partitions_are_those_of_the_hash_for_every_key_and_partition_count(keyed: str) -> None:
    partitioner = Partitioner(keyed)
    keys = [f"customer-{i % 5000}".encode() for i in range(12_000)]  # repeats, and more than are remembered
    for n, key in enumerate(keys):
        partitions = 6 if n % 3 else 7  # the count changes as a topic grows
        assert partitioner.partition("t", key, partitions) == KEYED[keyed](key, partitions)
