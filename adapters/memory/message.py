"""A record as the memory clients hand it out: confluent_kafka.Message's accessors."""

from __future__ import annotations

from dataclasses import dataclass

from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["TIMESTAMP_CREATE_TIME", "Message", "identity_of"]

TIMESTAMP_CREATE_TIME = 1  # confluent_kafka.TIMESTAMP_CREATE_TIME


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    """One record (or a delivery report's record); accessors named as confluent-kafka's."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None
    _headers: tuple[tuple[str, bytes], ...]
    _timestamp_ms: int
    cluster: str  # the cluster it was read from (or stored on)
    visit: int = 0  # a consumer's stay on a cluster it was read in (its switches before it)

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return list(self._headers)

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self._timestamp_ms

    def error(self) -> None:
        return None

    def identity(self) -> RecordId | None:
        """The record's ``hs-id``; None when it has none or a malformed one (never filtered)."""
        return identity_of(self._headers)


def identity_of(headers: tuple[tuple[str, bytes], ...]) -> RecordId | None:
    for name, raw in headers:
        if name == HEADER:
            try:
                rid: RecordId = RecordId.decode(raw)
                return rid
            except FormatError:
                return None
    return None
