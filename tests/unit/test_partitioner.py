from __future__ import annotations

import zlib

import pytest

from hotstandby.adapters.kafka.partitioner import Partitioner, murmur2
from hotstandby.errors import ValidationError


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
