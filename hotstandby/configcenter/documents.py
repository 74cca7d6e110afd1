"""The JSON documents kept in the config center: clusters, routes and links.

Each document is a frozen dataclass with ``from_json``/``to_json``. Parsing validates the
shape and raises :class:`~hotstandby.errors.ValidationError` naming the key and the problem;
checks that need other documents (does the route's cluster exist? same kind?) live in
:func:`check_route` and :func:`check_link`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hotstandby.configcenter.doc_parsing import load_object, read_text, validate_name
from hotstandby.configcenter.route_document import Route, check_floor, check_route_update, utc_now_iso
from hotstandby.errors import UnknownClusterError, ValidationError

__all__ = [
    "KINDS",
    "ClusterSpec",
    "Link",
    "Policy",
    "Route",
    "check_floor",
    "check_link",
    "check_route",
    "check_route_update",
    "resolve_secret_refs",
    "utc_now_iso",
    "validate_name",
]

Kind = Literal["kafka", "pulsar", "memory"]
KINDS: tuple[Kind, ...] = ("kafka", "pulsar", "memory")  # memory: the in-memory adapter (tests, simulation)
_SECRET_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_URL_FIELD: dict[str, str] = {"kafka": "bootstrap.servers", "pulsar": "service_url", "memory": "bootstrap.servers"}
Scalar = str | int | float | bool


def _client_map(key: str, doc: Mapping[str, Any], section: str) -> dict[str, Scalar]:
    value = doc.get(section, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float, bool)) for k, v in value.items()
    ):
        raise ValidationError(key, f"'{section}' must be an object of setting -> string/number/bool")
    return dict(value)


def resolve_secret_refs(config: Mapping[str, Scalar], environ: Mapping[str, str] | None = None) -> dict[str, Scalar]:
    """Replace ``${env:NAME}`` references by the variable's value; a missing one is an error."""
    env = os.environ if environ is None else environ
    out: dict[str, Scalar] = {}
    for k, v in config.items():
        if isinstance(v, str):
            missing = [m for m in _SECRET_REF.findall(v) if m not in env]
            if missing:
                raise ValidationError(k, f"environment variable {missing[0]} is not set")
            out[k] = _SECRET_REF.sub(lambda m: env[m.group(1)], v)
        else:
            out[k] = v
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSpec:
    """``<ns>/clusters/<name>``: how to reach one messaging cluster.

    ``client`` settings apply to every client of the cluster, ``producer`` and ``consumer``
    add role-specific ones (e.g. a broker that needs a shorter session timeout). Values may
    reference secrets as ``${env:NAME}``; they are resolved only when a client is built.
    """

    name: str
    kind: Kind
    url: str
    client: Mapping[str, Scalar] = field(default_factory=dict)
    producer: Mapping[str, Scalar] = field(default_factory=dict)
    consumer: Mapping[str, Scalar] = field(default_factory=dict)

    @property
    def url_field(self) -> str:
        """The JSON field that holds the URL: ``bootstrap.servers`` or ``service_url``."""
        return _URL_FIELD[self.kind]

    @classmethod
    def from_json(cls, name: str, raw: bytes | str, *, key: str | None = None) -> ClusterSpec:
        key = key or f"clusters/{name}"
        validate_name(key, name, "cluster")
        doc = load_object(key, raw)
        kind = doc.get("kind")
        if kind not in KINDS:
            raise ValidationError(key, f"'kind' must be one of {', '.join(KINDS)}, got {str(kind)[:40]!r}")
        url = doc.get(_URL_FIELD[kind])
        if not isinstance(url, str) or not url.strip():
            raise ValidationError(key, f"'{_URL_FIELD[kind]}' is required for a {kind} cluster")
        spec = cls(
            name=name,
            kind=kind,
            url=url.strip(),
            client=_client_map(key, doc, "client"),
            producer=_client_map(key, doc, "producer"),
            consumer=_client_map(key, doc, "consumer"),
        )
        spec._check_url(key)
        return spec

    def _check_url(self, key: str) -> None:
        if self.kind == "pulsar" and not re.match(r"^pulsar(\+ssl)?://[^/\s]+", self.url):
            raise ValidationError(key, f"service_url must look like pulsar://host:port, got {self.url[:200]!r}")
        try:
            self.endpoints()
        except ValueError:
            form = "pulsar://host:port[,host:port]" if self.kind == "pulsar" else "host:port[,host:port]"
            raise ValidationError(key, f"{self.url_field} must be {form}, got {self.url[:200]!r}") from None

    def to_json(self) -> str:
        doc: dict[str, Any] = {"kind": self.kind, self.url_field: self.url}
        for section in ("client", "producer", "consumer"):
            if getattr(self, section):
                doc[section] = dict(getattr(self, section))
        return json.dumps(doc, sort_keys=True)

    def client_config(self, role: Literal["producer", "consumer", "admin"] = "admin") -> dict[str, Scalar]:
        """Client settings for ``role`` with secret references resolved."""
        merged: dict[str, Scalar] = dict(self.client)
        if role in ("producer", "consumer"):
            merged.update(getattr(self, role))
        return resolve_secret_refs(merged)

    def endpoints(self) -> list[tuple[str, int]]:
        """``(host, port)`` pairs of the brokers named by the URL (for reachability probes).

        Raises ValueError for a URL without a port (parsed documents never have one)."""
        text = re.sub(r"^pulsar(\+ssl)?://", "", self.url)
        pairs = []
        for server in text.split(","):
            host, sep, port = server.strip().rstrip("/").rpartition(":")
            host = host.strip("[]")
            if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:
                raise ValueError(f"not host:port: {server.strip()[:100]!r}")
            pairs.append((host, int(port)))
        return pairs

    @property
    def uses_tls(self) -> bool:
        """Whether clients of this cluster speak TLS to the brokers (``pulsar+ssl://``, or
        Kafka's ``security.protocol`` SSL / SASL_SSL)."""
        if self.kind == "pulsar":
            return self.url.startswith("pulsar+ssl://")
        protocol = str(self.client.get("security.protocol", "plaintext")).lower()
        return protocol in ("ssl", "sasl_ssl")


Policy = Literal["prefix", "identity"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """``<ns>/links/<source>/<target>``: how records flow from one cluster to another.

    ``policy`` is MirrorMaker 2's replication policy: ``prefix`` (DefaultReplicationPolicy,
    remote topic ``<source><separator><topic>``) or ``identity`` (same name; Pulsar
    geo-replication always behaves so). ``offset_syncs`` says on which cluster MM2 keeps its
    ``mm2-offset-syncs.<target>.internal`` topic.
    """

    source: str
    target: str
    policy: Policy = "prefix"
    separator: str = "."
    offset_syncs: Literal["source", "target"] = "source"
    replicator: str = ""

    @classmethod
    def from_json(cls, source: str, target: str, raw: bytes | str, *, key: str | None = None) -> Link:
        key = key or f"links/{source}/{target}"
        validate_name(key, source, "cluster")
        validate_name(key, target, "cluster")
        if source == target:
            raise ValidationError(key, "a link needs two different clusters")
        doc = load_object(key, raw)
        policy = doc.get("policy", "prefix")
        if policy not in ("prefix", "identity"):
            raise ValidationError(key, f"'policy' must be 'prefix' or 'identity', got {policy!r}")
        separator = doc.get("separator", ".")
        if not isinstance(separator, str) or not separator:
            raise ValidationError(key, "'separator' must be a non-empty string")
        location = doc.get("offset_syncs", "source")
        if location not in ("source", "target"):
            raise ValidationError(key, f"'offset_syncs' must be 'source' or 'target', got {location!r}")
        replicator = read_text(key, doc, "replicator")
        return cls(
            source=source,
            target=target,
            policy=policy,
            separator=separator,
            offset_syncs=location,
            replicator=replicator,
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "policy": self.policy,
                "separator": self.separator,
                "offset_syncs": self.offset_syncs,
                "replicator": self.replicator,
            },
            sort_keys=True,
        )


def check_route(
    route: Route,
    clusters: Mapping[str, ClusterSpec],
    *,
    key: str | None = None,
    invalid: Mapping[str, str] | None = None,
) -> None:
    """Every cluster of the route is defined, and all are of one kind. ``invalid`` maps the
    names of clusters whose documents are invalid to the reason, for a clearer error."""
    key = key or f"routes/{route.name}"
    for name in route.clusters:
        if invalid and name in invalid:
            raise ValidationError(key, f"cluster {name!r} has an invalid definition: {invalid[name]}")
        if name not in clusters:
            raise UnknownClusterError(f"{key}: unknown cluster {name!r}")
    kinds = {clusters[name].kind for name in route.clusters}
    if len(kinds) > 1:
        raise ValidationError(key, f"clusters of different kinds in one route: {sorted(kinds)}")


def check_link(link: Link, clusters: Mapping[str, ClusterSpec], *, key: str | None = None) -> None:
    """Both ends are defined clusters of the same kind."""
    key = key or f"links/{link.source}/{link.target}"
    for name in (link.source, link.target):
        if name not in clusters:
            raise UnknownClusterError(f"{key}: unknown cluster {name!r}")
    if clusters[link.source].kind != clusters[link.target].kind:
        raise ValidationError(key, "a link joins two clusters of the same kind")
