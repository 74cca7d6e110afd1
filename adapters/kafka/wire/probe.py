"""Kafka reachability probe: an ApiVersions v0 request over a plain socket.

ApiVersions is what every Kafka client sends first; any Kafka-protocol broker answers it
without authentication. Request: size, api_key 18, api_version 0, correlation id, client id.
Response: size, correlation id, error code, [api_key, min_version, max_version]...
"""

from __future__ import annotations

import ssl
import struct

from hotstandby.adapters.kafka.wire.requests import Reader
from hotstandby.failover.probe import ProtocolError, request_frame

__all__ = ["api_keys", "finalized_features", "probe"]

_API_VERSIONS = 18
_CLIENT_ID = b"hotstandby-probe"


def probe(host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
    """Raise OSError/ProtocolError unless the broker answers ApiVersions; returns a summary.
    With ``tls`` the request goes through a TLS handshake made with that context."""
    return f"kafka protocol, {len(api_keys(host, port, timeout, tls=tls))} APIs"


def api_keys(host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> set[int]:
    """The API keys the broker serves (its ApiVersions answer); raises as :func:`probe`."""
    correlation_id = 0x4853  # "HS"
    body = struct.pack(">hhih", _API_VERSIONS, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    reply = request_frame(host, port, struct.pack(">i", len(body)) + body, timeout, tls=tls)
    if len(reply) < 10:
        raise ProtocolError(f"short ApiVersions response ({len(reply)} bytes)")
    got_id, error_code, count = struct.unpack(">ihi", reply[:10])
    if got_id != correlation_id:
        raise ProtocolError(f"correlation id {got_id} != {correlation_id}")
    if error_code != 0:
        raise ProtocolError(f"ApiVersions error code {error_code}")
    if len(reply) < 10 + 6 * count:
        raise ProtocolError(f"short ApiVersions response ({len(reply)} bytes for {count} APIs)")
    return {struct.unpack_from(">h", reply, 10 + 6 * i)[0] for i in range(count)}


def finalized_features(host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> dict[str, int]:
    """The cluster's finalized feature levels (``group.version``, ...) from an ApiVersions v3
    answer (KIP-584; brokers before 2.7 answer v3 with none). Raises as :func:`probe`."""
    correlation_id = 0x4854
    software = _CLIENT_ID
    # Header v2: api key, version, correlation id, client id (nullable string), no tags; body:
    # client software name and version (compact strings), no tags.
    header = struct.pack(">hhih", _API_VERSIONS, 3, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID + b"\x00"
    body = bytes([len(software) + 1]) + software + bytes([len(b"1") + 1]) + b"1" + b"\x00"
    reply = request_frame(host, port, struct.pack(">i", len(header) + len(body)) + header + body, timeout, tls=tls)
    r = Reader(reply)
    if r.take(">i") != correlation_id:  # ApiVersions answers with header v0 whatever the version
        raise ProtocolError("ApiVersions v3: wrong correlation id")
    error_code = r.take(">h")
    if error_code != 0:
        raise ProtocolError(f"ApiVersions v3 error code {error_code}")
    for _ in range(r.uvarint() - 1):  # api keys: key, min, max, tags
        r.take(">h"), r.take(">h"), r.take(">h")
        r.skip_tags()
    r.take(">i")  # throttle time
    features: dict[str, int] = {}
    for _ in range(r.uvarint()):  # tagged fields
        tag, size = r.uvarint(), r.uvarint()
        end = r.at + size
        if tag == 2:  # FinalizedFeatures: name, max version level, min version level, tags
            for _ in range(r.uvarint() - 1):
                name = r.compact_string()
                features[name] = r.take(">h")
                r.take(">h")
                r.skip_tags()
        r.skip_to(end)
    return features
