"""Is a cluster answering? One real protocol request per broker, timed.

The handshake is the adapter's (:meth:`~hotstandby.adapter.Adapter.probe`). A cluster whose
clients speak TLS (as its adapter tells from the URL and the client settings) is probed through
a TLS handshake made with the cluster's own settings — the CA file, whether to verify the
certificate and the host name, a client certificate — so a healthy TLS broker answers and a
certificate its clients would refuse is reported.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import time
from dataclasses import dataclass

from hotstandby.adapter import load_adapter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError

__all__ = ["ProbeResult", "ProtocolError", "probe_cluster", "request_frame", "tls_context"]


def tls_context(spec: ClusterSpec) -> ssl.SSLContext | None:
    """The TLS context a client of ``spec`` would use, or None for a plaintext cluster.

    The adapter reads the client's settings (:meth:`~hotstandby.adapter.Adapter.tls_settings`,
    with the client library's defaults): the CA file (else the system CAs), whether the
    certificate and the host name are checked, a client certificate. Raises OSError
    (ssl.SSLError, FileNotFoundError) for unusable files.
    """
    if not spec.uses_tls:
        return None
    tls = load_adapter(spec.kind).tls_settings(spec.client_config("admin"))
    try:
        context = ssl.create_default_context(cafile=tls.cafile)
    except OSError as exc:  # the error does not name the file
        raise OSError(f"{tls.cafile_setting} {tls.cafile!r}: {exc.strerror or exc}") from exc
    context.check_hostname = tls.verify and tls.check_hostname
    if not tls.verify:
        context.verify_mode = ssl.CERT_NONE
    if tls.certfile:
        context.load_cert_chain(tls.certfile, tls.keyfile, tls.password)
    return context


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
    """Send the system's handshake to each broker of ``spec`` until one answers (over TLS
    when the cluster's clients use TLS, see :func:`tls_context`)."""
    adapter = load_adapter(spec.kind)  # no client library needed
    try:
        tls = tls_context(spec)
    except (OSError, ConfigError) as exc:  # a missing CA file, an unset ${env:...}
        return ProbeResult(spec.name, False, None, f"TLS settings: {type(exc).__name__}: {exc}")
    detail = "no broker"
    for host, port in spec.endpoints():
        started = time.perf_counter()
        try:
            detail = adapter.probe(host, port, timeout, tls=tls)
        except (OSError, ProtocolError) as exc:
            detail = f"{host}:{port}: {type(exc).__name__}: {exc}"
            continue
        if tls:
            detail += ", TLS"
        return ProbeResult(spec.name, True, (time.perf_counter() - started) * 1000.0, detail)
    return ProbeResult(spec.name, False, None, detail)


def request_frame(
    host: str, port: int, frame: bytes, timeout: float, *, max_size: int = 1 << 20, tls: ssl.SSLContext | None = None
) -> bytes:
    """Send ``frame`` and read one reply framed by a big-endian int32 size (Kafka and Pulsar
    both), over TLS with ``tls`` (the handshake counts against ``timeout``)."""
    deadline = time.monotonic() + timeout
    with (
        socket.create_connection((host, port), timeout=timeout) as raw,
        # wrap_socket detaches ``raw``: the TLS socket is the one to close.
        tls.wrap_socket(raw, server_hostname=host) if tls else contextlib.nullcontext(raw) as sock,
    ):
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
