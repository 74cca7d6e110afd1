"""What the core asks of a messaging system: the adapter interface.

The core (config center documents, the probe, client options, partitioning, route following,
switching, ledgers) knows nothing of Kafka or Pulsar shapes: where the two differ, it asks the
system's :class:`Adapter`. Each system's package (``hotstandby.adapters.<kind>``, registered
in :mod:`hotstandby.registry`) provides, in its ``adapter`` module, one ``ADAPTER``. That
module must not import the client library: the config center parses cluster documents and the
probe checks brokers without it.

An adapter says:

* how a cluster is addressed: the document field holding its URL, the brokers a URL names,
  whether its clients speak TLS and with which settings, which client settings name a cluster
  (they come from the route, never from the application);
* how to tell that a broker answers (one protocol handshake over a socket);
* where the record identity travels and in which form (a Kafka header holds bytes, a Pulsar
  property must be text), and the keyed partitioner the system's own clients use;
* its drop-in clients (whose method names are the system's own, so they are not part of this
  interface).

Tools find their per-system parts in their own registrations (``hotstandby.drill.systems``,
``hotstandby.refcluster.systems``); nothing here names a tool. ``tests/contract/adapter.py``
holds the behaviour every adapter must show.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hotstandby.registry import import_adapter_module, kinds

if TYPE_CHECKING:
    import ssl

    from hotstandby.failover.identity import RecordId

__all__ = ["Adapter", "TlsSettings", "cluster_keys", "flag", "host_ports", "load_adapter"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSettings:
    """How a cluster's clients do TLS, as the adapter reads it from their configuration."""

    cafile: str | None  # None: the system's trusted CAs
    verify: bool  # check the broker's certificate
    check_hostname: bool
    certfile: str | None = None  # a client certificate
    keyfile: str | None = None
    password: str | None = None
    cafile_setting: str = ""  # the client setting that names the CA file (for messages)


@runtime_checkable
class Adapter(Protocol):
    """One messaging system, as the core sees it (stateless; one instance per system)."""

    kind: str
    url_field: str  # the cluster document's field that holds the URL ("bootstrap.servers", ...)
    url_form: str  # what such a URL looks like, for messages
    cluster_keys: tuple[str, ...]  # client settings that name a cluster: the route gives it
    default_partitioner: str  # the keyed partitioner of the system's clients (a Partitioner name)
    identity_key: str  # the header / property that carries the record identity

    def endpoints(self, url: str) -> list[tuple[str, int]]:
        """``(host, port)`` of each broker ``url`` names; ValueError (saying what is wrong)
        for a URL that is not of :attr:`url_form`."""
        ...

    def uses_tls(self, url: str, client: Mapping[str, Any]) -> bool:
        """Whether clients of a cluster at ``url`` with settings ``client`` speak TLS."""
        ...

    def tls_settings(self, client: Mapping[str, Any]) -> TlsSettings:
        """The TLS a client with settings ``client`` does (defaults of the client library)."""
        ...

    def probe(self, host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
        """Raise ``OSError`` or :class:`~hotstandby.failover.probe.ProtocolError` unless the broker at
        ``host:port`` answers the protocol's handshake within ``timeout`` s (through a TLS
        handshake with ``tls``); a short summary."""
        ...

    def encode_identity(self, rid: RecordId) -> bytes | str:
        """The identity as the system carries it."""
        ...

    def decode_identity(self, raw: bytes | str) -> RecordId:
        """The identity from what the system delivered; :class:`~hotstandby.errors.FormatError`
        when it is not one (such a record is handed out, never filtered)."""
        ...

    def clients(self) -> dict[str, type]:
        """The drop-in client classes, by the name users import them under."""
        ...


def load_adapter(kind: str) -> Adapter:
    """The adapter of ``kind`` (:class:`~hotstandby.errors.ValidationError` for an unknown kind)."""
    adapter = import_adapter_module(kind, "adapter").ADAPTER
    if not isinstance(adapter, Adapter):
        raise TypeError(f"hotstandby.adapters.{kind}.adapter.ADAPTER does not implement Adapter")
    return adapter


def cluster_keys() -> frozenset[str]:
    """The client settings that name a cluster, in any registered system: refused in a client's
    configuration (another system's key there is a mistake too)."""
    return frozenset(key for kind in kinds() for key in load_adapter(kind).cluster_keys)


_PORT = re.compile(r"[0-9]{1,5}")


def host_ports(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` (IPv6 hosts in brackets) as pairs; ValueError otherwise.
    For adapters whose URLs list brokers so."""
    pairs = []
    for server in text.split(","):
        host, sep, port = server.strip().rstrip("/").rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
            raise ValueError(f"not host:port: {server.strip()[:100]!r}")
        pairs.append((host, int(port)))
    return pairs


def flag(value: Any) -> bool:
    """A client setting read as a yes/no (``true``, ``1``, ``yes`` in any case: yes)."""
    return str(value).strip().lower() in ("true", "1", "yes")
