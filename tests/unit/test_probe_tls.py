"""Probes of TLS listeners: a healthy TLS broker answers, through a handshake with the
cluster's CA settings (a loopback TLS server with a certificate made for the test)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import probe_cluster

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hotstandby-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def _kafka_reply(body: bytes) -> bytes:
    correlation = struct.unpack(">i", body[4:8])[0]
    payload = struct.pack(">ihi", correlation, 0, 1) + struct.pack(">hhh", 18, 0, 3)
    return struct.pack(">i", len(payload)) + payload


def _pulsar_reply(body: bytes) -> bytes:
    server = b"\x0a\x03tls"
    command = b"\x08\x03" + b"\x1a" + bytes([len(server)]) + server
    return struct.pack(">ii", len(command) + 4, len(command)) + command


@pytest.fixture
def tls_broker(cert: tuple[Path, Path]) -> Iterator[Callable[[Callable[[bytes], bytes]], int]]:
    """Start a TLS listener on loopback answering one request per connection with ``reply``."""
    servers: list[socket.socket] = []
    threads: list[threading.Thread] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*cert)

    def start(reply: Callable[[bytes], bytes]) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(10)
        servers.append(server)

        def run() -> None:
            while True:
                try:
                    raw, _ = server.accept()
                except OSError:
                    return  # closed by the fixture
                try:
                    with context.wrap_socket(raw, server_side=True) as conn:
                        size = struct.unpack(">i", conn.recv(4))[0]
                        body = b""
                        while len(body) < size:
                            body += conn.recv(size - len(body))
                        conn.sendall(reply(body))
                except (ssl.SSLError, OSError, struct.error):
                    continue  # a client that does not speak TLS (or gave up): next one

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return int(server.getsockname()[1])

    yield start
    for server in servers:
        server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone does not)
        server.close()
    for thread in threads:
        thread.join(10)


def test_a_kafka_tls_listener_answers_with_the_clusters_ca(
    tls_broker: Callable[..., int], cert: tuple[Path, Path]
) -> None:
    port = tls_broker(_kafka_reply)
    spec = ClusterSpec(name="k", kind="kafka", url=f"127.0.0.1:{port}",
                       client={"security.protocol": "SSL", "ssl.ca.location": str(cert[0])})  # fmt: skip
    result = probe_cluster(spec, timeout=3.0)
    assert result.ok, result.detail
    assert result.detail.startswith("kafka protocol") and "TLS" in result.detail


def test_a_pulsar_ssl_listener_answers_with_the_clusters_trust_file(
    tls_broker: Callable[..., int], cert: tuple[Path, Path]
) -> None:
    port = tls_broker(_pulsar_reply)
    spec = ClusterSpec(name="p", kind="pulsar", url=f"pulsar+ssl://localhost:{port}",
                       client={"tls_trust_certs_file_path": str(cert[0]), "tls_validate_hostname": True})  # fmt: skip
    result = probe_cluster(spec, timeout=3.0)
    assert result.ok, result.detail
    assert result.detail.startswith("pulsar protocol, server tls")


def test_an_untrusted_certificate_is_reported_unless_verification_is_off(tls_broker: Callable[..., int]) -> None:
    port = tls_broker(_kafka_reply)
    spec = ClusterSpec(name="k", kind="kafka", url=f"127.0.0.1:{port}", client={"security.protocol": "SASL_SSL"})
    result = probe_cluster(spec, timeout=3.0)
    assert not result.ok and "certificate verify failed" in result.detail
    insecure = ClusterSpec(name="k", kind="kafka", url=f"127.0.0.1:{port}",
                           client={"security.protocol": "SASL_SSL", "enable.ssl.certificate.verification": "false"})  # fmt: skip
    assert probe_cluster(insecure, timeout=3.0).ok


def test_a_missing_ca_file_is_reported_not_raised(tls_broker: Callable[..., int], tmp_path: Path) -> None:
    port = tls_broker(_kafka_reply)
    spec = ClusterSpec(name="k", kind="kafka", url=f"127.0.0.1:{port}",
                       client={"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "nope.pem")})  # fmt: skip
    result = probe_cluster(spec, timeout=3.0)
    assert not result.ok and "nope.pem" in result.detail
