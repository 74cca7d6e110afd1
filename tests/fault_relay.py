"""A TCP relay on loopback that tests put between a client and a broker or etcd to make gray
failures: it passes traffic, stalls it (connections are accepted and bytes taken, nothing is
forwarded: what a partition looks like to a client), slows it (each chunk waits), or cuts it
(every connection is reset; new ones are closed at once).

Threads, not asyncio: a relay runs beside clients that block, and each pump waits on the
relay's condition in bounded slices, so a mode change reaches it at once and a stopped relay
ends within one slice.
"""

from __future__ import annotations

import contextlib
import enum
import socket
import struct
import threading
from types import TracebackType

__all__ = ["FaultRelay", "Mode"]

_CHUNK = 65536
_SLICE_S = 0.05  # a pump's longest wait before it looks at the mode again


class Mode(enum.Enum):
    PASS = "pass"
    STALL = "stall"
    SLOW = "slow"
    CUT = "cut"


def _reset(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a peer that vanished does."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class FaultRelay:
    """Relays ``127.0.0.1:port`` to ``target`` (see the module docs)."""

    def __init__(self, target: tuple[str, int], *, port: int = 0) -> None:
        if target[0] not in ("127.0.0.1", "localhost"):
            raise ValueError(f"a fault relay forwards to loopback only, not {target[0]}")
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.settimeout(_SLICE_S)
        self.port: int = self._listener.getsockname()[1]
        self._cond = threading.Condition()
        self._mode = Mode.PASS
        self._delay_s = 0.0
        self._stopped = False
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self.accepted = 0
        self._acceptor = threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True)
        self._acceptor.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def set(self, mode: Mode, delay_s: float = 0.0) -> None:
        """Change the mode; ``delay_s`` is each chunk's wait under :attr:`Mode.SLOW`."""
        with self._cond:
            self._mode, self._delay_s = mode, delay_s
            doomed = list(self._sockets) if mode is Mode.CUT else []
            self._cond.notify_all()
        for sock in doomed:
            _reset(sock)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            doomed = list(self._sockets)
            self._cond.notify_all()
        for sock in doomed:
            _reset(sock)
        self._listener.close()
        for thread in [self._acceptor, *self._threads]:
            thread.join(timeout=5)

    def __enter__(self) -> FaultRelay:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- the threads ------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener closed: stopped
            self.accepted += 1
            if self._mode is Mode.CUT:
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)  # the target refuses: so does the relay
                continue
            # Both timeouts before either pump starts: a pump that ends closes both sockets.
            client.settimeout(_SLICE_S)
            upstream.settimeout(_SLICE_S)
            with self._cond:
                self._sockets.update((client, upstream))
            self._threads = [t for t in self._threads if t.is_alive()]  # a long run opens many
            for src, dst in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _wait_to_forward(self) -> bool:
        """Hold while the relay stalls; False once the connection is to end."""
        with self._cond:
            while self._mode is Mode.STALL and not self._stopped:
                self._cond.wait(_SLICE_S)
            if self._stopped or self._mode is Mode.CUT:
                return False
            delay = self._delay_s if self._mode is Mode.SLOW else 0.0
        if delay:
            with self._cond:
                self._cond.wait_for(lambda: self._stopped or self._mode is not Mode.SLOW, delay)
        return not self._stopped

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self._stopped:
                try:
                    data = src.recv(_CHUNK)
                except TimeoutError:
                    continue
                if not data:
                    break
                if not self._wait_to_forward():
                    break
                dst.sendall(data)
        except OSError:
            pass  # reset by a cut, a stop or a peer
        finally:
            with self._cond:
                self._sockets.discard(src)
                self._sockets.discard(dst)
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
