"""Client settings as small frozen value objects.

Precedence, the one rule everywhere: an explicit argument wins over the environment
(``HOTSTANDBY_*``), which wins over the built-in default. An empty environment variable
counts as unset.

=========================  =======================  ==================
setting                    environment              default
=========================  =======================  ==================
``etcd`` endpoints         ``HOTSTANDBY_ETCD``      ``127.0.0.1:2379``
``namespace``              ``HOTSTANDBY_NAMESPACE`` ``/hotstandby``
``etcd_timeout`` seconds   ``HOTSTANDBY_ETCD_TIMEOUT`` ``5.0``
``etcd_security``          ``HOTSTANDBY_ETCD_CA``,  none (plaintext,
                           ``..._USER``, ...        no credentials)
=========================  =======================  ==================

Endpoints are ``HOST:PORT``, ``http://HOST:PORT`` or ``https://HOST:PORT`` (TLS); TLS and
credentials: :mod:`hotstandby.etcd_security`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hotstandby.errors import ValidationError
from hotstandby.etcd_security import EtcdSecurity

__all__ = ["DEFAULT_ETCD", "DEFAULT_NAMESPACE", "Endpoint", "Settings", "parse_endpoints"]

DEFAULT_ETCD = "127.0.0.1:2379"
DEFAULT_NAMESPACE = "/hotstandby"
DEFAULT_ETCD_TIMEOUT = 5.0
PLAINTEXT = EtcdSecurity()  # no TLS, no credentials


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One ``host:port`` of the config center."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _wants_tls(text: str | Sequence[str]) -> bool:
    items = text.split(",") if isinstance(text, str) else list(text)
    schemes = {item.strip().startswith("https://") for item in items}
    if len(schemes) > 1:
        raise ValidationError("etcd", "endpoints must all be https:// or none")
    return schemes == {True}


def parse_endpoints(text: str | Sequence[str], *, key: str = "etcd") -> tuple[Endpoint, ...]:
    """Parse ``HOST:PORT[,HOST:PORT]`` (or a list of such strings; ``http://`` or ``https://``
    before each) into endpoints."""
    items = text.split(",") if isinstance(text, str) else list(text)
    endpoints: list[Endpoint] = []
    for raw in items:
        item = raw.strip()
        item = item.removeprefix("http://").removeprefix("https://").rstrip("/")
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValidationError(key, f"expected HOST:PORT, got {raw!r}")
        endpoints.append(Endpoint(host.strip("[]"), int(port)))
    if not endpoints:
        raise ValidationError(key, "no endpoint given")
    return tuple(endpoints)


def _normalise_namespace(namespace: str) -> str:
    ns = "/" + namespace.strip().strip("/")
    if ns == "/" or any(part == "" for part in ns[1:].split("/")):
        raise ValidationError("namespace", f"expected a path like /hotstandby, got {namespace!r}")
    return ns


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Where the config center is and how long to wait for it."""

    etcd: tuple[Endpoint, ...] = parse_endpoints(DEFAULT_ETCD)
    namespace: str = DEFAULT_NAMESPACE
    etcd_timeout: float = DEFAULT_ETCD_TIMEOUT
    etcd_security: EtcdSecurity = PLAINTEXT

    @classmethod
    def resolve(
        cls,
        *,
        etcd: str | Sequence[str] | None = None,
        namespace: str | None = None,
        etcd_timeout: float | None = None,
        etcd_ca: str | None = None,
        etcd_cert: str | None = None,
        etcd_key: str | None = None,
        etcd_user: str | None = None,
        etcd_password: str | None = None,
        etcd_password_file: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Build settings from arguments, then ``HOTSTANDBY_*`` variables, then defaults."""
        env = os.environ if environ is None else environ

        def pick(arg: object, name: str, default: str) -> str:
            if arg is not None:
                return str(arg) if not isinstance(arg, (list, tuple)) else ",".join(arg)
            return env.get(name) or default

        timeout_text = pick(etcd_timeout, "HOTSTANDBY_ETCD_TIMEOUT", str(DEFAULT_ETCD_TIMEOUT))
        try:
            timeout = float(timeout_text)
        except ValueError:
            raise ValidationError("etcd_timeout", f"not a number: {timeout_text!r}") from None
        if timeout <= 0:
            raise ValidationError("etcd_timeout", f"must be positive, got {timeout}")
        endpoints = pick(etcd, "HOTSTANDBY_ETCD", DEFAULT_ETCD)
        security = EtcdSecurity.resolve(tls=_wants_tls(endpoints), ca=etcd_ca, cert=etcd_cert, key=etcd_key,
                                        user=etcd_user, password=etcd_password, password_file=etcd_password_file,
                                        environ=env)  # fmt: skip
        return cls(
            etcd=parse_endpoints(endpoints),
            namespace=_normalise_namespace(pick(namespace, "HOTSTANDBY_NAMESPACE", DEFAULT_NAMESPACE)),
            etcd_timeout=timeout,
            etcd_security=security,
        )
