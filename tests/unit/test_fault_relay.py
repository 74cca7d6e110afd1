"""The tests' fault relay against an echo server on loopback (no broker)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.fault_relay import FaultRelay, Mode


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    stopped = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    data = conn.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                with contextlib.suppress(OSError):
                    conn.sendall(data)

    def accept() -> None:
        while not stopped.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield server.getsockname()
    stopped.set()
    server.close()
    acceptor.join(5)


@pytest.fixture
def relay(echo: tuple[str, int]) -> Iterator[FaultRelay]:
    with FaultRelay(echo) as r:
        yield r


def connect(relay: FaultRelay) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", relay.port), timeout=2)
    sock.settimeout(2)
    return sock


def round_trip(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = sock.recv(4096)
        if not chunk:
            break
        got += chunk
    return got


def test_it_passes_traffic_both_ways(relay: FaultRelay) -> None:
    with connect(relay) as sock:
        assert round_trip(sock, b"hello") == b"hello"
        assert round_trip(sock, b"x" * 100_000) == b"x" * 100_000


def test_a_stall_takes_the_bytes_and_forwards_nothing_until_it_ends(relay: FaultRelay) -> None:
    with connect(relay) as sock:
        assert round_trip(sock, b"before") == b"before"
        relay.set(Mode.STALL)
        sock.sendall(b"held")
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
        relay.set(Mode.PASS)
        sock.settimeout(2)
        assert sock.recv(4096) == b"held", "what the stall held goes through after it"


def test_a_stalled_relay_still_accepts_connections(relay: FaultRelay) -> None:
    relay.set(Mode.STALL)
    with connect(relay) as sock:  # accepted: a partition looks like a slow peer, not a refusal
        sock.sendall(b"ping")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(4096)


def test_slow_delays_each_chunk(relay: FaultRelay) -> None:
    relay.set(Mode.SLOW, delay_s=0.8)
    with connect(relay) as sock:
        started = time.monotonic()
        assert round_trip(sock, b"slow") == b"slow"
        assert time.monotonic() - started >= 1.5, "delayed on the way there and back"
    relay.set(Mode.PASS)
    with connect(relay) as sock:
        started = time.monotonic()
        assert round_trip(sock, b"fast") == b"fast"
        assert time.monotonic() - started < 0.8, "no delay once the relay passes again"


def test_a_cut_resets_open_connections_and_closes_new_ones(relay: FaultRelay) -> None:
    with connect(relay) as sock:
        assert round_trip(sock, b"up") == b"up"
        relay.set(Mode.CUT)
        with pytest.raises((ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            for _ in range(50):  # the reset shows on a read or on a later write
                if not round_trip(sock, b"gone"):
                    raise ConnectionResetError("closed")
                time.sleep(0.02)
    assert first_read(relay) == b"", "a new connection is closed at once"


def first_read(relay: FaultRelay) -> bytes:
    """What a new connection reads first; b"" for one closed or reset, whether the reset comes
    while it connects or at its first read."""
    try:
        with connect(relay) as sock:
            return sock.recv(4096)
    except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
        return b""


def test_a_relay_forwards_to_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        FaultRelay(("10.0.0.1", 9092))


def test_stop_ends_every_thread(echo: tuple[str, int]) -> None:
    before = threading.active_count()
    relay = FaultRelay(echo)
    socks = [connect(relay) for _ in range(3)]
    for s in socks:
        assert round_trip(s, b"a") == b"a"
    relay.stop()
    for s in socks:
        s.close()
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threading.active_count() <= before
