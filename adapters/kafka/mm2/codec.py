"""MirrorMaker 2's internal records, byte for byte.

Kafka protocol-type structs: fields in order, no names, big-endian. STRING is an INT16 byte
length then UTF-8 (never null, at most 32767 bytes). Decoding rejects truncated input and
negative string lengths, and ignores trailing bytes, as Kafka's ``Schema.read`` does.

============  =================================================  =================================================
record        key                                                value
============  =================================================  =================================================
OffsetSync    STRING topic (source name), INT32 partition        INT64 upstreamOffset, INT64 downstreamOffset
Checkpoint    STRING group, STRING topic (target name), INT32    INT16 version=0, INT64 upstreamOffset,
              partition                                          INT64 downstreamOffset, STRING metadata
Heartbeat     STRING sourceClusterAlias, STRING targetAlias      INT16 version=0, INT64 timestamp (ms)
============  =================================================  =================================================

All three live in partition 0 of single-partition compacted topics.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hotstandby.errors import FormatError

__all__ = ["Checkpoint", "Heartbeat", "OffsetSync"]

_MAX_STRING = 32767
_VERSION = 0


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def string(self, text: str) -> _Writer:
        data = text.encode("utf-8")
        if len(data) > _MAX_STRING:
            raise FormatError(f"string of {len(data)} bytes is longer than {_MAX_STRING}")
        self.parts.append(struct.pack(">h", len(data)) + data)
        return self

    def pack(self, fmt: str, *values: int) -> _Writer:
        try:
            self.parts.append(struct.pack(">" + fmt, *values))
        except struct.error:
            raise FormatError(f"value out of range for {fmt}: {values}") from None
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def _take(self, n: int, field: str) -> bytes:
        if self.pos + n > len(self.data):
            raise FormatError(
                f"{self.what}: truncated at {field} (needs {n} bytes at offset {self.pos}, {len(self.data)} in all)"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def string(self, field: str) -> str:
        (length,) = struct.unpack(">h", self._take(2, field))
        if length < 0:
            raise FormatError(f"{self.what}: {field} has negative string length {length}")
        try:
            return self._take(length, field).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"{self.what}: {field} is not UTF-8: {exc}") from None

    def unpack(self, fmt: str, field: str) -> int:
        (value,) = struct.unpack(">" + fmt, self._take(struct.calcsize(">" + fmt), field))
        return int(value)

    def version(self) -> int:
        version = self.unpack("h", "version")
        if version != _VERSION:
            raise FormatError(f"{self.what}: unknown version {version}")
        return version


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Upstream offset ``upstream_offset`` of ``topic``/``partition`` (source names) was
    written downstream at ``downstream_offset``."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def key(self) -> bytes:
        return _Writer().string(self.topic).pack("i", self.partition).bytes()

    def value(self) -> bytes:
        return _Writer().pack("qq", self.upstream_offset, self.downstream_offset).bytes()

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        k, v = _Reader(key, "OffsetSync key"), _Reader(value, "OffsetSync value")
        topic, partition = k.string("topic"), k.unpack("i", "partition")
        return cls(topic, partition, v.unpack("q", "upstreamOffset"), v.unpack("q", "downstreamOffset"))


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Consumer group ``group`` committed ``upstream_offset`` on the source; on the target,
    ``topic``/``partition`` (target names) it may resume at ``downstream_offset``."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def key(self) -> bytes:
        return _Writer().string(self.group).string(self.topic).pack("i", self.partition).bytes()

    def value(self) -> bytes:
        return (
            _Writer()
            .pack("h", _VERSION)
            .pack("qq", self.upstream_offset, self.downstream_offset)
            .string(self.metadata)
            .bytes()
        )

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        k, v = _Reader(key, "Checkpoint key"), _Reader(value, "Checkpoint value")
        group, topic, partition = k.string("group"), k.string("topic"), k.unpack("i", "partition")
        v.version()
        upstream, downstream = v.unpack("q", "upstreamOffset"), v.unpack("q", "downstreamOffset")
        return cls(group, topic, partition, upstream, downstream, v.string("metadata"))


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """``source_alias`` -> ``target_alias`` replication was alive at ``timestamp_ms``."""

    source_alias: str
    target_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        return _Writer().string(self.source_alias).string(self.target_alias).bytes()

    def value(self) -> bytes:
        return _Writer().pack("h", _VERSION).pack("q", self.timestamp_ms).bytes()

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        k, v = _Reader(key, "Heartbeat key"), _Reader(value, "Heartbeat value")
        source, target = k.string("sourceClusterAlias"), k.string("targetClusterAlias")
        v.version()
        return cls(source, target, v.unpack("q", "timestamp"))
