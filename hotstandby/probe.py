"""Is a cluster answering? One real protocol request per broker, timed."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

from hotstandby.documents import ClusterSpec
from hotstandby.registry import import_adapter_module

__all__ = ["ProbeResult", "ProtocolError", "probe_cluster", "request_frame"]


class ProtocolError(Exception):
    """A broker answered, but not with what the protocol says it should."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Outcome of probing one cluster: the first broker that answered, or the last error."""

    cluster: str
    ok: bool
    latency_ms: float | None
    detail: str


def probe_cluster(spec: ClusterSpec, timeout: float = 2.0) -> ProbeResult:
    """Send the system's handshake to each broker of ``spec`` until one answers."""
    probe = import_adapter_module(spec.kind, "probe").probe  # without the client library
    detail = "no broker"
    for host, port in spec.endpoints():
        started = time.perf_counter()
        try:
            detail = probe(host, port, timeout)
        except (OSError, ProtocolError) as exc:
            detail = f"{host}:{port}: {type(exc).__name__}: {exc}"
            continue
        return ProbeResult(spec.name, True, (time.perf_counter() - started) * 1000.0, detail)
    return ProbeResult(spec.name, False, None, detail)


def request_frame(host: str, port: int, frame: bytes, timeout: float, *, max_size: int = 1 << 20) -> bytes:
    """Send ``frame`` and read one reply framed by a big-endian int32 size (Kafka and Pulsar both)."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)

        def read(n: int) -> bytes:
            buf = bytearray()
            while len(buf) < n:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(n - len(buf))
                if not chunk:
                    raise ProtocolError(f"connection closed after {len(buf)} of {n} bytes")
                buf += chunk
            return bytes(buf)

        (size,) = struct.unpack(">i", read(4))
        if not 0 < size <= max_size:
            raise ProtocolError(f"implausible frame size {size}")
        return read(size)
