"""A consumer group's state, asked over the Kafka protocol (ApiVersions, FindCoordinator,
DescribeGroups) on plain sockets, not through librdkafka's AdminClient.

librdkafka (2.x) aborts the whole process, now and then, in its admin requests to a group
coordinator (``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``, the only
callers of which are those requests): an hour of flips in ``bench/soak.py`` killed the
application process that way. Leaving a group in turn (:mod:`.group_leave`) asks for the
group's state ten times a second while members leave, so it asks here instead: three short
requests, each on a connection of its own, over TLS when the cluster's clients use it.

Only versions without tagged fields are spoken (FindCoordinator 0-2, DescribeGroups 0-4), the
highest the broker takes. A broker that takes none of them, or a cluster whose clients
authenticate with SASL (which these requests would have to do first), answers
:data:`UNSUPPORTED`.
"""

from __future__ import annotations

import itertools
import ssl
import struct

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import ProtocolError, request_frame, tls_context

__all__ = ["UNSUPPORTED", "group_state"]

UNSUPPORTED = "Unsupported"  # the state of a group this module cannot ask about
_UNKNOWN = "Unknown"  # no answer yet: no coordinator yet, or it is loading the group
_TRANSIENT = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
_API_VERSIONS, _FIND_COORDINATOR, _DESCRIBE_GROUPS = 18, 10, 15
_SPOKEN = {_FIND_COORDINATOR: 2, _DESCRIBE_GROUPS: 4}  # the highest versions without tagged fields
_CLIENT_ID = b"hotstandby-groups"
_ids = itertools.count(1)


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


class _Reader:
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


def _request(address: tuple[str, int], api: int, version: int, body: bytes, timeout: float,
             tls: ssl.SSLContext | None) -> _Reader:  # fmt: skip
    correlation = next(_ids) & 0x7FFFFFFF
    payload = struct.pack(">hhih", api, version, correlation, len(_CLIENT_ID)) + _CLIENT_ID + body
    reply = _Reader(request_frame(*address, struct.pack(">i", len(payload)) + payload, timeout, tls=tls))
    if reply.take(">i") != correlation:
        raise ProtocolError("correlation id mismatch")
    return reply


def versions(reply: _Reader) -> dict[int, int]:
    """An ApiVersions v0 response (after the correlation id): the version of each API we
    speak, the highest both sides take."""
    if (error := reply.take(">h")) != 0:
        raise ProtocolError(f"ApiVersions error code {error}")
    chosen = {}
    for _ in range(reply.take(">i")):
        api, low, high = reply.take(">h"), reply.take(">h"), reply.take(">h")
        if api in _SPOKEN and low <= _SPOKEN[api]:
            chosen[api] = min(high, _SPOKEN[api])
    return chosen


def coordinator(reply: _Reader, version: int) -> tuple[str, int] | None:
    """A FindCoordinator response: the coordinator's address, None while there is none."""
    if version >= 1:
        reply.take(">i")  # throttle time
    error = reply.take(">h")
    if version >= 1:
        reply.string()  # error message
    reply.take(">i")  # node id
    host, port = reply.string(), reply.take(">i")
    return None if error or not host else (host, port)


def described_state(reply: _Reader, version: int) -> str:
    """A DescribeGroups response for one group: its state. An error that says the group is
    none of this API's (no such group, a KIP-848 consumer group) is :data:`UNSUPPORTED`."""
    if version >= 1:
        reply.take(">i")  # throttle time
    if reply.take(">i") < 1:
        raise ProtocolError("DescribeGroups answered no group")
    error = reply.take(">h")
    reply.string()  # group id
    state = reply.string()
    if error:
        return _UNKNOWN if error in _TRANSIENT else UNSUPPORTED
    return state or _UNKNOWN


def group_state(spec: ClusterSpec, group: str, timeout: float = 2.0) -> str | None:
    """``group``'s state on ``spec`` ("Stable", "Empty", "PreparingRebalance", ...); None when
    no broker answers; :data:`UNSUPPORTED` (see the module doc)."""
    if str(spec.client_config("admin").get("security.protocol", "")).upper().startswith("SASL"):
        return UNSUPPORTED
    tls = tls_context(spec)
    for address in spec.endpoints():
        try:
            spoken = versions(_request(address, _API_VERSIONS, 0, b"", timeout, tls))
            if len(spoken) < len(_SPOKEN):
                return UNSUPPORTED
            find = spoken[_FIND_COORDINATOR]
            body = _string(group) + (b"\x00" if find >= 1 else b"")  # key type 0: a group
            found = coordinator(_request(address, _FIND_COORDINATOR, find, body, timeout, tls), find)
            if found is None:
                return _UNKNOWN
            describe = spoken[_DESCRIBE_GROUPS]
            body = struct.pack(">i", 1) + _string(group) + (b"\x00" if describe >= 3 else b"")
            return described_state(_request(found, _DESCRIBE_GROUPS, describe, body, timeout, tls), describe)
        except (OSError, ProtocolError, struct.error, UnicodeDecodeError):
            continue
    return None
