"""Pulsar reachability probe: a CONNECT command over a plain socket, expecting CONNECTED.

Frame: totalSize (int32) | commandSize (int32) | BaseCommand (protobuf). BaseCommand field 1
is the type (CONNECT = 2, CONNECTED = 3, ERROR = 14), field 2 the CommandConnect
(client_version = 1, protocol_version = 4), field 3 the CommandConnected (server_version = 1),
field 14 the CommandError (error = 2, message = 3).

A broker that requires authentication answers our credential-less CONNECT with an
AuthenticationError or AuthorizationError: it is up (the clients bring credentials), so the
probe reports it as answering; any other ERROR is a failure.
"""

from __future__ import annotations

import ssl
import struct

from hotstandby.errors import FormatError
from hotstandby.failover.identity import read_uvarint, write_uvarint
from hotstandby.failover.probe import ProtocolError, request_frame

__all__ = ["probe"]

_CONNECT, _CONNECTED, _ERROR = 2, 3, 14
_AUTH_ERRORS = {3: "AuthenticationError", 4: "AuthorizationError"}  # ServerError values
_PROTOCOL_VERSION = 21


def _fields(buf: bytes) -> dict[int, int | bytes]:
    """Decode the varint and length-delimited fields of one protobuf message (last wins)."""
    out: dict[int, int | bytes] = {}
    pos = 0
    try:
        while pos < len(buf):
            tag, pos = read_uvarint(buf, pos, "protobuf tag")
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                out[field], pos = read_uvarint(buf, pos, "protobuf varint")
            elif wire == 2:
                size, pos = read_uvarint(buf, pos, "protobuf length")
                out[field] = buf[pos : pos + size]
                pos += size
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:
                raise ProtocolError(f"unexpected protobuf wire type {wire}")
    except FormatError as exc:
        raise ProtocolError(str(exc)) from None
    return out


def probe(host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
    """Raise OSError/ProtocolError unless the broker answers CONNECTED; returns its version.
    With ``tls`` the request goes through a TLS handshake made with that context."""
    version = b"hotstandby-probe"
    connect = b"\x0a" + write_uvarint(len(version)) + version + b"\x20" + write_uvarint(_PROTOCOL_VERSION)
    command = b"\x08" + write_uvarint(_CONNECT) + b"\x12" + write_uvarint(len(connect)) + connect
    frame = struct.pack(">ii", len(command) + 4, len(command)) + command
    reply = request_frame(host, port, frame, timeout, tls=tls)
    (size,) = struct.unpack(">i", reply[:4])
    fields = _fields(reply[4 : 4 + size])
    kind = fields.get(1)
    if kind == _CONNECTED:
        connected = fields.get(3, b"")
        server = _fields(connected).get(1, b"") if isinstance(connected, bytes) else b""
        return f"pulsar protocol, server {server.decode(errors='replace') if isinstance(server, bytes) else '?'}"
    if kind == _ERROR:
        error = fields.get(14, b"")
        detail = _fields(error) if isinstance(error, bytes) else {}
        code, message = detail.get(2), detail.get(3, b"")
        text = message.decode(errors="replace") if isinstance(message, bytes) else ""
        if isinstance(code, int) and code in _AUTH_ERRORS:
            return f"pulsar protocol, needs credentials ({_AUTH_ERRORS[code]}: {text})"
        raise ProtocolError(f"broker answered CONNECT with ERROR {code!r}: {text}")
    raise ProtocolError(f"unexpected reply command type {kind!r}")
