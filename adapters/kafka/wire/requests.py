"""The few Kafka protocol requests the SDK sends itself, on plain or TLS sockets, about a
consumer group: framing, reading, and finding the group's coordinator (FindCoordinator v2, a
non-flexible version every Kafka since 2.4 answers). Used instead of librdkafka's admin
requests to a coordinator, which abort the process now and then (``group_state``,
``stale_members``)."""

from __future__ import annotations

import ssl
import struct

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import ProtocolError, request_frame

__all__ = ["MOVING", "CoordinatorMoving", "Reader", "find_coordinator", "request", "string"]

_FIND_COORDINATOR, _FIND_COORDINATOR_V = 10, 2
_CLIENT_ID = b"hotstandby"
MOVING = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """One request frame (header v1: the client id, no tagged fields)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(header) + len(body)) + header + body


class Reader:
    """Reads a response's fields in order."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        value = self._data[self._at : self._at + size].decode()
        self._at += size
        return value

    # Flexible versions (KIP-482): unsigned varints, compact strings, tagged fields.

    @property
    def at(self) -> int:
        return self._at

    def skip_to(self, at: int) -> None:
        self._at = at

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self._at >= len(self._data):
                raise ProtocolError("truncated response")
            byte = self._data[self._at]
            self._at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str:
        size = self.uvarint() - 1
        value = self._data[self._at : self._at + size].decode()
        self._at += size
        return value

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._at += self.uvarint()


class CoordinatorMoving(ProtocolError):
    """The group's coordinator is loading or elsewhere (a restarted broker): ask again."""


def find_coordinator(spec: ClusterSpec, group: str, timeout: float, tls: ssl.SSLContext | None) -> tuple[str, int]:
    """The address of ``group``'s coordinator, asked of each bootstrap broker in turn. Raises
    :class:`CoordinatorMoving`, ProtocolError, or the last broker's OSError."""
    last: Exception = ProtocolError("no bootstrap server")
    for host, port in spec.endpoints():
        body = string(group) + struct.pack(">b", 0)  # key type: group
        try:
            reply = request_frame(host, port, request(_FIND_COORDINATOR, _FIND_COORDINATOR_V, 1, body), timeout,
                                  tls=tls)  # fmt: skip
        except (OSError, ProtocolError) as exc:
            last = exc
            continue
        r = Reader(reply)
        if r.take(">i") != 1:
            raise ProtocolError("FindCoordinator: wrong correlation id")
        r.take(">i")  # throttle time
        error = r.take(">h")
        message = r.string()
        r.take(">i")  # node id
        found_host, found_port = r.string() or "", r.take(">i")
        if error in MOVING:
            raise CoordinatorMoving(f"FindCoordinator error {error}: {message or ''}")
        if error:
            raise ProtocolError(f"FindCoordinator error {error}: {message or ''}")
        return found_host, found_port
    raise last
