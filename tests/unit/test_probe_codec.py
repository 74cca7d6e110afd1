"""The probes' wire encodings, checked against a local fake peer (no brokers)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.adapters.kafka.wire import probe as kafka_probe
from hotstandby.adapters.pulsar import probe as pulsar_probe
from hotstandby.failover.identity import write_uvarint
from hotstandby.failover.probe import ProtocolError


@given(st.integers(min_value=0, max_value=2**63))
def test_varint_roundtrip(n: int) -> None:
    encoded = b"\x08" + write_uvarint(n)  # field 1, varint
    assert pulsar_probe._fields(encoded) == {1: n}


def serve_once(reply: Callable[[bytes], bytes]) -> tuple[int, threading.Thread, list[bytes]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    seen: list[bytes] = []

    def run() -> None:
        conn, _ = server.accept()
        with conn, server:
            size = struct.unpack(">i", conn.recv(4))[0]
            body = b""
            while len(body) < size:
                body += conn.recv(size - len(body))
            seen.append(body)
            conn.sendall(reply(body))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return server.getsockname()[1], t, seen


def test_kafka_probe_sends_api_versions_v0_and_checks_the_correlation_id() -> None:
    def reply(body: bytes) -> bytes:
        api_key, version, corr = struct.unpack(">hhi", body[:8])
        assert (api_key, version) == (18, 0)
        payload = struct.pack(">ihi", corr, 0, 1) + struct.pack(">hhh", 0, 0, 9)
        return struct.pack(">i", len(payload)) + payload

    port, t, seen = serve_once(reply)
    assert kafka_probe.probe("127.0.0.1", port, 2.0) == "kafka protocol, 1 APIs"
    t.join(2)
    assert seen[0].endswith(b"hotstandby-probe")


def test_kafka_probe_rejects_an_error_code() -> None:
    def reply(body: bytes) -> bytes:
        corr = struct.unpack(">i", body[4:8])[0]
        payload = struct.pack(">ihi", corr, 35, 0)
        return struct.pack(">i", len(payload)) + payload

    port, _, _ = serve_once(reply)
    with pytest.raises(ProtocolError, match="error code 35"):
        kafka_probe.probe("127.0.0.1", port, 2.0)


def test_pulsar_probe_sends_connect_and_reads_connected() -> None:
    def reply(body: bytes) -> bytes:
        fields = pulsar_probe._fields(body[4:])
        assert fields[1] == 2  # CONNECT
        connect = pulsar_probe._fields(fields[2])  # type: ignore[arg-type]
        assert connect[1] == b"hotstandby-probe"
        server = b"\x0a\x04test"
        cmd = b"\x08\x03" + b"\x1a" + bytes([len(server)]) + server
        return struct.pack(">ii", len(cmd) + 4, len(cmd)) + cmd

    port, _, _ = serve_once(reply)
    assert pulsar_probe.probe("127.0.0.1", port, 2.0) == "pulsar protocol, server test"


def _error_reply(code: int, message: bytes) -> bytes:
    error = b"\x08\x01\x10" + bytes([code]) + b"\x1a" + bytes([len(message)]) + message
    command = b"\x08\x0e\x72" + bytes([len(error)]) + error  # type ERROR, field 14 (CommandError)
    return struct.pack(">ii", len(command) + 4, len(command)) + command


def test_pulsar_probe_reports_error_reply() -> None:
    port, _, _ = serve_once(lambda body: struct.pack(">ii", 6, 2) + b"\x08\x0e")
    with pytest.raises(ProtocolError, match="ERROR"):
        pulsar_probe.probe("127.0.0.1", port, 2.0)
    port, _, _ = serve_once(lambda body: _error_reply(6, b"not ready"))  # ServiceNotReady
    with pytest.raises(ProtocolError, match="not ready"):
        pulsar_probe.probe("127.0.0.1", port, 2.0)


def test_a_broker_that_wants_credentials_answers() -> None:
    port, _, _ = serve_once(lambda body: _error_reply(3, b"no auth data"))  # AuthenticationError
    assert "needs credentials" in pulsar_probe.probe("127.0.0.1", port, 2.0)


def test_closed_connection_is_a_protocol_error() -> None:
    port, _, _ = serve_once(lambda body: b"\x00\x00")
    with pytest.raises(ProtocolError, match="closed"):
        kafka_probe.probe("127.0.0.1", port, 2.0)
