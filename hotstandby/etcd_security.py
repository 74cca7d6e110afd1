"""How clients prove themselves to etcd and check etcd's identity: TLS and user credentials.

Whoever can write to etcd steers every client (``docs/security.md``), so an etcd in production
wants TLS and authentication. The settings follow the one precedence rule (explicit >
``HOTSTANDBY_ETCD_*`` > default):

==============================  ==============================  =====================================
setting                         environment                     meaning
==============================  ==============================  =====================================
``ca``                          ``HOTSTANDBY_ETCD_CA``          PEM file of the CA that signed etcd's
                                                                certificate: TLS (so do ``https://``
                                                                endpoints, with the system's CAs)
``cert``, ``key``               ``HOTSTANDBY_ETCD_CERT``,       the client's certificate and key (PEM
                                ``HOTSTANDBY_ETCD_KEY``         files), for etcd's ``--client-cert-auth``
``user``                        ``HOTSTANDBY_ETCD_USER``        etcd user (with a password)
``password``                    ``HOTSTANDBY_ETCD_PASSWORD``    its password; or ``password_file`` /
                                                                ``HOTSTANDBY_ETCD_PASSWORD_FILE``
==============================  ==============================  =====================================

A password never appears in a ``repr``, a log or an error; files are read when connecting, and
an error names the file, never its content.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from hotstandby.errors import ConfigError, ValidationError

__all__ = ["ETCD_SECURITY_KEYS", "EtcdSecurity", "EtcdSecurityArgs", "etcd_security_args"]


#: Client configuration keys (after ``hotstandby.``) for the settings below.
ETCD_SECURITY_KEYS = ("etcd.ca", "etcd.cert", "etcd.key", "etcd.user", "etcd.password", "etcd.password.file")


class EtcdSecurityArgs(TypedDict):
    """:meth:`~hotstandby.settings.Settings.resolve`'s arguments for TLS and credentials."""

    etcd_ca: str | None
    etcd_cert: str | None
    etcd_key: str | None
    etcd_user: str | None
    etcd_password: str | None
    etcd_password_file: str | None


def etcd_security_args(config: Mapping[str, object], prefix: str) -> EtcdSecurityArgs:
    """The arguments from a client's configuration (``hotstandby.etcd.ca``, ...)."""

    def get(key: str) -> str | None:
        value = config.get(prefix + key)
        return None if value is None else str(value)

    return EtcdSecurityArgs(etcd_ca=get("etcd.ca"), etcd_cert=get("etcd.cert"), etcd_key=get("etcd.key"),
                            etcd_user=get("etcd.user"), etcd_password=get("etcd.password"),
                            etcd_password_file=get("etcd.password.file"))  # fmt: skip


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"etcd {what}: cannot read {path}: {exc.strerror}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class EtcdSecurity:
    """TLS and credentials for etcd (see the module docs); the default is neither."""

    tls: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls,
        *,
        tls: bool = False,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        user: str | None = None,
        password: str | None = None,
        password_file: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> EtcdSecurity:
        """Arguments first, then ``HOTSTANDBY_ETCD_*``; ``tls`` is asked for by ``https://``
        endpoints (a CA or a client certificate asks for it too)."""
        env = os.environ if environ is None else environ

        def pick(arg: str | None, name: str) -> str | None:
            return arg if arg else (env.get(f"HOTSTANDBY_ETCD_{name}") or None)

        ca, cert, key, user = pick(ca, "CA"), pick(cert, "CERT"), pick(key, "KEY"), pick(user, "USER")
        if password is None and not password_file:
            password = env.get("HOTSTANDBY_ETCD_PASSWORD") or None
            password_file = password_file or env.get("HOTSTANDBY_ETCD_PASSWORD_FILE") or None
        if password is None and password_file:
            password = _read(password_file, "password file").decode().rstrip("\r\n")
        if (cert is None) != (key is None):
            raise ValidationError("etcd.cert", "a client certificate needs its key, and a key its certificate")
        if (user is None) != (password is None):
            raise ValidationError("etcd.user", "etcd credentials need both a user and a password")
        return cls(tls=tls or ca is not None or cert is not None, ca=ca, cert=cert, key=key, user=user,
                   password=password)  # fmt: skip

    def channel_credentials(self) -> object | None:
        """grpc's channel credentials for TLS (None: plaintext); reads the PEM files."""
        if not self.tls:
            return None
        import grpc  # the etcd client's dependency

        root = _read(self.ca, "CA") if self.ca else None
        chain = _read(self.cert, "certificate") if self.cert else None
        private = _read(self.key, "key") if self.key else None
        creds: object = grpc.ssl_channel_credentials(
            root_certificates=root, private_key=private, certificate_chain=chain
        )
        return creds
