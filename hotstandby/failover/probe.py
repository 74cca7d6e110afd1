"""Is a cluster answering? One real protocol request per broker, timed.

A cluster whose clients speak TLS (Kafka ``security.protocol`` SSL or SASL_SSL, Pulsar
``pulsar+ssl://``) is probed through a TLS handshake made with the cluster's own settings —
the CA file, whether to verify the certificate and the host name, a client certificate — so
a healthy TLS broker answers and a certificate its clients would refuse is reported.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError
from hotstandby.registry import import_adapter_module

__all__ = ["ProbeResult", "ProtocolError", "probe_cluster", "request_frame", "tls_context"]

# The client settings that say how to do TLS: (CA file, verify certificate, verify host name,
# client certificate, client key, key password) and the defaults of each client library.
_TLS_SETTINGS: dict[str, tuple[str, str, str, str, str, str]] = {
    "kafka": ("ssl.ca.location", "enable.ssl.certificate.verification", "ssl.endpoint.identification.algorithm",
              "ssl.certificate.location", "ssl.key.location", "ssl.key.password"),
    "pulsar": ("tls_trust_certs_file_path", "tls_allow_insecure_connection", "tls_validate_hostname",
               "tls_certificate_file_path", "tls_private_key_file_path", ""),
}  # fmt: skip


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes", "https")


def tls_context(spec: ClusterSpec) -> ssl.SSLContext | None:
    """The TLS context a client of ``spec`` would use, or None for a plaintext cluster.

    Kafka: ``ssl.ca.location`` (else the system CAs), ``enable.ssl.certificate.verification``
    (default true), ``ssl.endpoint.identification.algorithm`` (default https: host name
    checked). Pulsar: ``tls_trust_certs_file_path``, ``tls_allow_insecure_connection``
    (default false), ``tls_validate_hostname`` (default false, as in pulsar-client).
    Raises OSError (ssl.SSLError, FileNotFoundError) for unusable files.
    """
    if not spec.uses_tls:
        return None
    config: Mapping[str, Any] = spec.client_config("admin")
    ca, verify_key, hostname_key, cert, key, password = _TLS_SETTINGS[spec.kind]
    if spec.kind == "kafka":
        verify = _flag(config.get(verify_key, True))
        check_host = _flag(config.get(hostname_key, "https"))
    else:
        verify = not _flag(config.get(verify_key, False))
        check_host = _flag(config.get(hostname_key, False))
    cafile = config.get(ca)
    cafile = str(cafile) if cafile and cafile != "probe" else None
    try:
        context = ssl.create_default_context(cafile=cafile)
    except OSError as exc:  # the error does not name the file
        raise OSError(f"{ca} {cafile!r}: {exc.strerror or exc}") from exc
    context.check_hostname = verify and check_host
    if not verify:
        context.verify_mode = ssl.CERT_NONE
    if config.get(cert):
        secret = config.get(password) if password else None
        context.load_cert_chain(str(config[cert]), str(config.get(key) or "") or None, str(secret) if secret else None)
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
    probe = import_adapter_module(spec.kind, "probe").probe  # without the client library
    try:
        tls = tls_context(spec)
    except (OSError, ConfigError) as exc:  # a missing CA file, an unset ${env:...}
        return ProbeResult(spec.name, False, None, f"TLS settings: {type(exc).__name__}: {exc}")
    detail = "no broker"
    for host, port in spec.endpoints():
        started = time.perf_counter()
        try:
            detail = probe(host, port, timeout, tls=tls) if tls else probe(host, port, timeout)
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
