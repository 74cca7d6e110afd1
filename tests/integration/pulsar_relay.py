"""A loopback TCP relay in front of a Pulsar broker that keeps what each client connection
said first: the CONNECT command, with the credentials the client brought."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hotstandby.adapters.pulsar.probe import _fields

__all__ = ["Connect", "Relay"]

_CONNECT = 2  # BaseCommand.type; BaseCommand field 2 is the CommandConnect
_AUTH_DATA, _AUTH_METHOD_NAME = 3, 5  # CommandConnect fields
_JOIN_S = 10.0
_ACCEPT_WAIT_S = 0.1


@dataclass(frozen=True)
class Connect:
    """A CONNECT command as a client sent it."""

    auth_method: str  # "" without credentials (as the reachability probe sends it)
    auth_data: bytes


def parse_connect(frame: bytes) -> Connect | None:
    """The CONNECT in one frame (totalSize, commandSize, BaseCommand); None for another command."""
    (size,) = struct.unpack(">i", frame[4:8])
    command = _fields(frame[8 : 8 + size])
    body = command.get(2)
    if command.get(1) != _CONNECT or not isinstance(body, bytes):
        return None
    connect = _fields(body)
    method, data = connect.get(_AUTH_METHOD_NAME, b""), connect.get(_AUTH_DATA, b"")
    return Connect(method.decode() if isinstance(method, bytes) else "", data if isinstance(data, bytes) else b"")


class Relay:
    """Listens on a free port of 127.0.0.1 and forwards each connection to ``target``, both
    ways, in threads; :meth:`connects` lists the CONNECT commands that went through. Close it
    (a context manager) to end every connection and thread."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(_ACCEPT_WAIT_S)  # accept() looks at _closing this often
        self._closing = threading.Event()
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._first: list[bytes] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = self._spawn(self._accept)

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def connects(self) -> list[Connect]:
        with self._lock:
            frames = list(self._first)
        return [c for c in map(parse_connect, frames) if c is not None]

    def close(self) -> None:
        self._closing.set()
        self._acceptor.join(_JOIN_S)  # no connection comes after it
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in threads:
            thread.join(_JOIN_S)
            assert not thread.is_alive(), f"relay thread {thread.name} did not end"
        self._server.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True, name=f"relay-{self.port}")
        with self._lock:
            self._threads.append(thread)
        thread.start()
        return thread

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self._target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            self._spawn(self._pump, client, upstream, True)
            self._spawn(self._pump, upstream, client, False)

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        first: bytes | None = b"" if from_client else None  # until the client's first frame is whole
        try:
            while data := source.recv(65536):
                if first is not None:
                    first += data
                    if len(first) >= 4 and len(first) >= (end := 4 + struct.unpack(">i", first[:4])[0]):
                        with self._lock:
                            self._first.append(first[:end])
                        first = None
                sink.sendall(data)
        except OSError:
            pass  # the other side or close() ended it
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
