"""The JSON documents kept in the config center: clusters, routes and links.

Each document is a frozen dataclass with ``from_json``/``to_json``. Parsing validates the
shape and raises :class:`~hotstandby.errors.ValidationError` naming the key and the problem;
checks that need other documents (does the route's cluster exist? same kind?) live in
:func:`check_route` and :func:`check_link`. What differs between messaging systems (the field
that holds a cluster's URL, its form, TLS) comes from the system's adapter
(:func:`~hotstandby.adapter.load_adapter`); a cluster's ``kind`` is a registered one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from hotstandby.adapter import load_adapter
from hotstandby.configcenter.doc_parsing import load_object, read_text, validate_name
from hotstandby.configcenter.route_document import Route, check_floor, check_route_update, utc_now_iso
from hotstandby.errors import UnknownClusterError, ValidationError
from hotstandby.registry import kinds
from hotstandby.secret_refs import redact_value, resolve_refs

__all__ = [
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

Scalar = str | int | float | bool


def _client_map(key: str, doc: Mapping[str, Any], section: str) -> dict[str, Scalar]:
    value = doc.get(section, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float, bool)) for k, v in value.items()
    ):
        raise ValidationError(key, f"'{section}' must be an object of setting -> string/number/bool")
    return dict(value)


def resolve_secret_refs(config: Mapping[str, Scalar], environ: Mapping[str, str] | None = None) -> dict[str, Scalar]:
    """Replace ``${env:NAME}`` and ``${file:PATH}`` references by what they name; a missing one
    is an error (:mod:`hotstandby.secret_refs`)."""
    return cast(dict[str, Scalar], resolve_refs(config, environ))


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ClusterSpec:
    """``<ns>/clusters/<name>``: how to reach one messaging cluster.

    ``client`` settings apply to every client of the cluster, ``producer`` and ``consumer``
    add role-specific ones (e.g. a broker that needs a shorter session timeout). Values may
    reference secrets as ``${env:NAME}``; they are resolved only when a client is built.
    """

    name: str
    kind: str  # a registered adapter's kind (hotstandby.registry)
    url: str
    client: Mapping[str, Scalar] = field(default_factory=dict)
    producer: Mapping[str, Scalar] = field(default_factory=dict)
    consumer: Mapping[str, Scalar] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Literal secrets and a URL's password as ``***`` (references as they are)."""
        shown = {section: {k: redact_value(k, v) for k, v in getattr(self, section).items()}
                 for section in ("client", "producer", "consumer")}  # fmt: skip
        return (f"ClusterSpec(name={self.name!r}, kind={self.kind!r}, url={redact_value('url', self.url)!r}, "
                f"client={shown['client']!r}, producer={shown['producer']!r}, consumer={shown['consumer']!r})")  # fmt: skip

    @property
    def url_field(self) -> str:
        """The JSON field that holds the URL (Kafka: ``bootstrap.servers``, Pulsar: ``service_url``)."""
        return load_adapter(self.kind).url_field

    @classmethod
    def from_json(cls, name: str, raw: bytes | str, *, key: str | None = None) -> ClusterSpec:
        key = key or f"clusters/{name}"
        validate_name(key, name, "cluster")
        doc = load_object(key, raw)
        kind = doc.get("kind")
        if not isinstance(kind, str) or kind not in kinds():
            raise ValidationError(key, f"'kind' must be one of {', '.join(kinds())}, got {str(kind)[:40]!r}")
        url_field = load_adapter(kind).url_field
        url = doc.get(url_field)
        if not isinstance(url, str) or not url.strip():
            raise ValidationError(key, f"'{url_field}' is required for a {kind} cluster")
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
        adapter = load_adapter(self.kind)
        try:
            adapter.endpoints(self.url)
        except ValueError:
            shown = str(redact_value("url", self.url))[:200]
            raise ValidationError(key, f"{adapter.url_field} must be {adapter.url_form}, got {shown!r}") from None

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

        Raises ValueError for a URL not of the system's form (parsed documents never have one)."""
        return load_adapter(self.kind).endpoints(self.url)

    @property
    def uses_tls(self) -> bool:
        """Whether clients of this cluster speak TLS to the brokers (the adapter says: Kafka's
        ``security.protocol`` SSL / SASL_SSL, Pulsar's ``pulsar+ssl://``)."""
        return load_adapter(self.kind).uses_tls(self.url, self.client)


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
