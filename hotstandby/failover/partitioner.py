"""Choosing a partition the way the user's other producers do.

The SDK picks the partition itself before sending, because sequences in ``hs-id`` are
contiguous per partition. Keyed records: ``murmur2`` (Kafka's default) is the Kafka Java
client's partitioner — ``(murmur2(key) & 0x7fffffff) % partitions`` — which librdkafka also
offers as ``murmur2_random``; ``crc32`` matches librdkafka's ``consistent``; ``java-string``
(Pulsar's default) is the Pulsar Java client's default ``JavaStringHash`` —
``(key.hashCode() & 0x7fffffff) % partitions`` over the key as text. Unkeyed records stick to one
partition for a batch of records, then move on round-robin (like the Java client's sticky
partitioner, with a fixed batch size). Which keyed partitioner a system's clients use by
default, its adapter says (:attr:`~hotstandby.adapter.Adapter.default_partitioner`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

from hotstandby.errors import ValidationError

__all__ = ["KEYED", "Partitioner", "java_string_hash", "murmur2"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
# Unpackers of n little-endian 32-bit blocks, made once (a format string per call costs more).
_UNPACK = [struct.Struct(f"<{n}I").unpack_from for n in range(65)]
# Keyed partitions remembered per partitioner: keys repeat (an entity's records share one), and
# a hash in Python costs microseconds. Cleared when full, which bounds the memory.
_CACHED_KEYS = 4096


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c), as a signed 32-bit int like Java's ``Utils.murmur2``."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    blocks = length >> 2
    if blocks:
        unpack = _UNPACK[blocks] if blocks < len(_UNPACK) else struct.Struct(f"<{blocks}I").unpack_from
        for block in unpack(data):  # one call, not a slice per block
            k = (block * _M) & _MASK
            k = ((k ^ (k >> 24)) * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        i = blocks << 2
        if tail == 3:
            h ^= data[i + 2] << 16
        if tail >= 2:
            h ^= data[i + 1] << 8
        h = ((h ^ data[i]) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


KEYED: dict[str, Callable[[bytes, int], int]] = {
    "murmur2": lambda key, n: (murmur2(key) & 0x7FFFFFFF) % n,
    "crc32": lambda key, n: zlib.crc32(key) % n,
    "java-string": lambda key, n: (java_string_hash(key.decode("utf-8", "surrogatepass")) & 0x7FFFFFFF) % n,
}


class Partitioner:
    """Keyed: a hash of the key; unkeyed: sticky for ``sticky_records`` records, then the next."""

    def __init__(self, keyed: str = "murmur2", sticky_records: int = 100) -> None:
        if keyed not in KEYED:
            raise ValidationError("hotstandby.partitioner", f"unknown partitioner {keyed!r}; known: {', '.join(KEYED)}")
        self._keyed = KEYED[keyed]
        self._sticky_records = sticky_records
        self._sticky: dict[str, tuple[int, int]] = {}  # topic -> (partition, records left)
        self._known: dict[tuple[bytes, int], int] = {}  # (key, partitions) -> partition

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        if partitions <= 0:
            raise ValidationError(topic, "topic has no partitions")
        if key is not None:
            found = self._known.get((key, partitions))
            if found is None:
                if len(self._known) >= _CACHED_KEYS:
                    self._known.clear()
                found = self._known[(key, partitions)] = self._keyed(key, partitions)
            return found
        current, left = self._sticky.get(topic, (-1, 0))
        if left <= 0 or current >= partitions:
            current = (current + 1) % partitions
            left = self._sticky_records
        self._sticky[topic] = (current, left - 1)
        return current
