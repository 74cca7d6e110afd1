"""The ``hs-id`` record identity that survives replication.

Every record the SDK produces carries ``hs-id`` (a Kafka header with the bytes below; a
Pulsar property, which must be text, with their hex form). It names the record independently
of any cluster's offsets: the producer session (random, 128 bit, per producer instance), the partition the SDK
chose, and a sequence number contiguous per (session, topic, partition) — like Kafka's
idempotent producer (PID + per-partition sequence) and Pulsar's dedup (producer name +
sequence id).

Binary layout, version 1 (18 to 30 bytes)::

    0x01 | session: 16 bytes | partition: unsigned LEB128 varint | sequence: unsigned LEB128 varint

Unknown versions, truncated values and trailing bytes are rejected (:class:`FormatError`):
an identity that cannot be trusted must not filter a record away.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from hotstandby.errors import FormatError

__all__ = [
    "HEADER",
    "VERSION",
    "IdentityText",
    "RecordId",
    "id_prefix",
    "new_session",
    "read_uvarint",
    "with_sequence",
    "write_uvarint",
]

HEADER = "hs-id"
VERSION = 1
_SESSION_BYTES = 16


def new_session() -> bytes:
    """A fresh random producer session id (128 bit)."""
    return os.urandom(_SESSION_BYTES)


def write_uvarint(value: int) -> bytes:
    if value < 0:
        raise FormatError(f"varint must be non-negative, got {value}")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def read_uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """Decode a varint at ``pos``; returns (value, next position)."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise FormatError(f"{what}: truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise FormatError(f"{what}: varint longer than 64 bits")


def id_prefix(session: bytes, partition: int) -> bytes:
    """What every identity of ``session`` and ``partition`` starts with: version, session,
    partition (a producer makes it once per partition)."""
    if len(session) != _SESSION_BYTES:
        raise FormatError(f"session must be {_SESSION_BYTES} bytes, got {len(session)}")
    if 0 <= partition < 0x80:
        return b"\x01" + session + bytes((partition,))
    return bytes((VERSION,)) + session + write_uvarint(partition)


def with_sequence(prefix: bytes, sequence: int) -> bytes:
    """The identity of ``sequence`` under ``prefix`` (:func:`id_prefix`): one per record sent,
    so the varint's common lengths are unrolled."""
    if 0 <= sequence < 0x80:
        return prefix + bytes((sequence,))
    low = (sequence & 0x7F) | 0x80
    if 0 <= sequence < 0x4000:
        return prefix + bytes((low, sequence >> 7))
    if 0 <= sequence < 0x200000:
        return prefix + bytes((low, ((sequence >> 7) & 0x7F) | 0x80, sequence >> 14))
    return prefix + write_uvarint(sequence)


_new_id = tuple.__new__


class RecordId(NamedTuple):
    """Identity of one produced record.

    A named tuple rather than a dataclass: consumers decode, hash and compare one per record
    received, and a tuple's hash and equality run in C.
    """

    session: bytes
    partition: int
    sequence: int

    def encode(self) -> bytes:
        return with_sequence(id_prefix(self.session, self.partition), self.sequence)

    @classmethod
    def decode(cls, data: bytes) -> RecordId:
        size = len(data)
        # Fast path for what the SDK writes (bytes, partition < 128, sequence < 2**21), unrolled
        # because consumers decode one identity per record received.
        if type(data) is bytes and 19 <= size <= 21 and data[0] == VERSION and data[17] < 0x80:
            last = data[size - 1]
            if last < 0x80:
                if size == 19:
                    return _new_id(cls, (data[1:17], data[17], last))
                b18 = data[18]
                if size == 20 and b18 >= 0x80:
                    return _new_id(cls, (data[1:17], data[17], (b18 & 0x7F) | last << 7))
                b19 = data[19]
                if size == 21 and b18 >= 0x80 and b19 >= 0x80:
                    return _new_id(cls, (data[1:17], data[17], (b18 & 0x7F) | (b19 & 0x7F) << 7 | last << 14))
        if not data:
            raise FormatError("hs-id: empty")
        if data[0] != VERSION:
            raise FormatError(f"hs-id: unknown version {data[0]}")
        if size < 1 + _SESSION_BYTES:
            raise FormatError(f"hs-id: truncated session ({size} bytes)")
        session = bytes(data[1 : 1 + _SESSION_BYTES])
        partition, pos = read_uvarint(data, 1 + _SESSION_BYTES, "hs-id partition")
        sequence, pos = read_uvarint(data, pos, "hs-id sequence")
        if pos != size:
            raise FormatError(f"hs-id: {size - pos} unexpected trailing bytes")
        return cls(session, partition, sequence)

    def text(self) -> str:
        """The string form used where values must be text (Pulsar properties): hex."""
        return self.encode().hex()

    @classmethod
    def from_text(cls, text: str) -> RecordId:
        try:
            return cls.decode(bytes.fromhex(text))
        except ValueError as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"hs-id: not hex: {text[:40]!r}") from None


_HEX_BYTE = [f"{b:02x}" for b in range(256)]


class IdentityText:
    """The text form (:meth:`RecordId.text`) of one session's identities, made the way a
    producer needs them: one per record sent, so the session's part is formatted once."""

    def __init__(self, session: bytes) -> None:
        if len(session) != _SESSION_BYTES:
            raise FormatError(f"session must be {_SESSION_BYTES} bytes, got {len(session)}")
        self._prefix = bytes((VERSION,)).hex() + session.hex()
        self._prefixes = [self._prefix + _HEX_BYTE[p] for p in range(0x80)]  # with the partition

    def text(self, partition: int, sequence: int) -> str:
        if 0 <= partition < 0x80 and 0 <= sequence < 0x200000:  # what producers send (unrolled)
            hexed = _HEX_BYTE
            if sequence < 0x80:
                return self._prefixes[partition] + hexed[sequence]
            if sequence < 0x4000:
                return self._prefixes[partition] + hexed[(sequence & 0x7F) | 0x80] + hexed[sequence >> 7]
            return (self._prefixes[partition] + hexed[(sequence & 0x7F) | 0x80]
                    + hexed[((sequence >> 7) & 0x7F) | 0x80] + hexed[sequence >> 14])  # fmt: skip
        return self._prefix + write_uvarint(partition).hex() + write_uvarint(sequence).hex()
