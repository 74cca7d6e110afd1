"""A throwaway certificate authority for a secure reference cluster: a CA, a server
certificate for the loopback address, and client certificates, as PEM files.

For a local rehearsal only: keys are written unencrypted (mode 0600) next to the cluster's
state, and the CA lives as long as the directory.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from hotstandby.errors import MissingDependencyError

_MISSING: ImportError | None = None
try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError as exc:  # pragma: no cover - part of the refcluster extra
    _MISSING = exc  # raised when a CA is asked for: a plaintext cluster does without

__all__ = ["CertPair", "LocalCA"]

_VALID = datetime.timedelta(days=30)


@dataclass(frozen=True)
class CertPair:
    """A certificate and its key, as PEM file paths."""

    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, data: bytes, *, private: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


class LocalCA:
    """A CA in ``directory`` (``ca.pem``), made on first use; issues certificates there."""

    def __init__(self, directory: Path) -> None:
        if _MISSING is not None:  # pragma: no cover - part of the refcluster extra
            raise MissingDependencyError(
                "a secure reference cluster needs cryptography: pip install 'hotstandby[refcluster]'"
            ) from _MISSING
        self.directory = Path(directory)
        self.cert_path = self.directory / "ca.pem"
        key_path = self.directory / "ca-key.pem"
        if self.cert_path.exists() and key_path.exists():
            self._cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            self._key = key
            return
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name("hotstandby reference CA"))
            .issuer_name(_name("hotstandby reference CA"))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        _write(key_path, self._key_pem(self._key), private=True)
        _write(self.cert_path, self._cert.public_bytes(serialization.Encoding.PEM))

    @staticmethod
    def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())  # fmt: skip

    def issue(self, name: str, *, server: bool) -> CertPair:
        """``<name>.pem`` and ``<name>-key.pem``: a server certificate for 127.0.0.1 and
        localhost, or a client certificate whose common name is ``name`` (etcd takes it as the
        user name with ``--client-cert-auth``)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertPair(
            cert=_write(self.directory / f"{name}.pem", cert.public_bytes(serialization.Encoding.PEM)),
            key=_write(self.directory / f"{name}-key.pem", self._key_pem(key), private=True),
        )
