"""MM2 record formats: the byte vectors from Kafka's sources, round trips, malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.adapters.kafka.mm2.codec import Checkpoint, Heartbeat, OffsetSync
from hotstandby.errors import FormatError


def hexbytes(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_offset_sync_vector() -> None:
    sync = OffsetSync("orders", 0, 100, 42)
    assert sync.key() == hexbytes("00 06 6f 72 64 65 72 73 00 00 00 00")
    assert sync.value() == hexbytes("00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 2a")
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


def test_checkpoint_vector() -> None:
    cp = Checkpoint("g1", "A.orders", 0, 100, 42, "")
    assert cp.key() == hexbytes("00 02 67 31 00 08 41 2e 6f 72 64 65 72 73 00 00 00 00")
    assert cp.value() == hexbytes("00 0000 00 00 00 00 00 00 6400 00 00 00 00 00 00 2a00 00")
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


def test_heartbeat_layout() -> None:
    hb = Heartbeat("A", "B", 1_700_000_000_000)
    assert hb.key() == hexbytes("00 01 41 00 01 42")
    assert hb.value() == hexbytes("00 00") + (1_700_000_000_000).to_bytes(8, "big")
    assert Heartbeat.decode(hb.key(), hb.value()) == hb


text = st.text(max_size=200)
offset = st.integers(min_value=-(2**63), max_value=2**63 - 1)
partition = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@given(text, partition, offset, offset)
def test_offset_sync_roundtrip(topic: str, p: int, up: int, down: int) -> None:
    sync = OffsetSync(topic, p, up, down)
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


@given(text, text, partition, offset, offset, text)
def test_checkpoint_roundtrip(group: str, topic: str, p: int, up: int, down: int, meta: str) -> None:
    cp = Checkpoint(group, topic, p, up, down, meta)
    assert Checkpoint.decode(cp.key(), cp.value()) == cp


@given(text, text, offset)
def test_heartbeat_roundtrip(source: str, target: str, ts: int) -> None:
    hb = Heartbeat(source, target, ts)
    assert Heartbeat.decode(hb.key(), hb.value()) == hb


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    sync = OffsetSync("t", 1, 2, 3)
    assert OffsetSync.decode(sync.key() + b"\xff\xff", sync.value() + b"junk") == sync
    cp = Checkpoint("g", "t", 0, 5, 4, "m")
    assert Checkpoint.decode(cp.key() + b"\x00", cp.value() + b"\x01\x02") == cp


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        (hexbytes("00 06 6f 72 64"), hexbytes("00" * 16), "truncated at topic"),
        (hexbytes("00 01 74 00 00"), hexbytes("00" * 16), "truncated at partition"),
        (hexbytes("ff ff 00 00 00 00"), hexbytes("00" * 16), "negative string length -1"),
        (hexbytes("00 01 74 00 00 00 00"), hexbytes("00" * 15), "truncated at downstreamOffset"),
        (hexbytes("00 01 ff 00 00 00 00"), hexbytes("00" * 16), "not UTF-8"),
    ],
)
def test_malformed_offset_sync_is_rejected_clearly(key: bytes, value: bytes, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        OffsetSync.decode(key, value)


def test_malformed_checkpoint_and_heartbeat() -> None:
    cp = Checkpoint("g", "t", 0, 1, 1, "meta")
    with pytest.raises(FormatError, match="unknown version 1"):
        Checkpoint.decode(cp.key(), b"\x00\x01" + cp.value()[2:])
    with pytest.raises(FormatError, match="truncated at metadata"):
        Checkpoint.decode(cp.key(), cp.value()[:-1])
    with pytest.raises(FormatError, match="truncated at version"):
        Heartbeat.decode(Heartbeat("a", "b", 1).key(), b"\x00")
    with pytest.raises(FormatError, match="longer than 32767"):
        OffsetSync("x" * 40000, 0, 0, 0).key()
