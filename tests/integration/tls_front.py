"""A TLS front for a plaintext broker in tests: accepts TLS on a loopback port with a server
certificate and passes the bytes to the broker's plaintext port, both ways.

Clients see a TLS listener (their certificate checks, host name checks and handshake failures
are real); the broker behind it sees plain connections. It runs an asyncio loop on a thread of
the test process and is stopped by :meth:`TlsFront.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from pathlib import Path

__all__ = ["TlsFront"]

HOST = "127.0.0.1"
_CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass  # a side went away: the other is closed below
    finally:
        writer.close()


class TlsFront:
    """TLS on ``127.0.0.1:<port>`` (bound at once, so the port is known before the broker
    starts and can be advertised), forwarded to ``127.0.0.1:<upstream>`` once :meth:`start`."""

    def __init__(self, cert: Path, key: Path) -> None:
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        self._sock = socket.create_server((HOST, 0))
        self.port: int = self._sock.getsockname()[1]
        self.upstream = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._main: asyncio.Task[None] | None = None
        self._ready = threading.Event()

    def start(self, upstream: int) -> None:
        self.upstream = upstream
        self._thread = threading.Thread(target=self._run, name=f"tls-front-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"the TLS front on port {self.port} did not start within 10 s")

    def _run(self) -> None:
        self._main = self._loop.create_task(self._serve())
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._main)
        self._loop.close()

    async def _serve(self) -> None:
        connections: set[asyncio.Task[None]] = set()

        async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connections.add(task)
            try:
                broker_r, broker_w = await asyncio.open_connection(HOST, self.upstream)
            except OSError:
                client_w.close()
                connections.discard(task)
                return
            try:
                await asyncio.gather(_pipe(client_r, broker_w), _pipe(broker_r, client_w))
            finally:
                connections.discard(task)

        server = await asyncio.start_server(handle, sock=self._sock, ssl=self._context, ssl_handshake_timeout=5)
        self._ready.set()
        try:
            await asyncio.Event().wait()  # until cancelled by close()
        finally:
            server.close()
            for task in list(connections):
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)
            await server.wait_closed()

    def close(self) -> None:
        """Stop accepting, drop the open connections, end the thread (at most 10 s)."""
        if self._thread is None:
            self._sock.close()
            return
        if self._main is not None:
            self._loop.call_soon_threadsafe(self._main.cancel)
        self._thread.join(10)
        if self._thread.is_alive():
            raise RuntimeError(f"the TLS front on port {self.port} did not stop within 10 s")
