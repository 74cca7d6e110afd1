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
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Literal

from hotstandby.errors import StaleEpochError, UnknownClusterError, ValidationError

__all__ = [
    "KINDS",
    "ClusterSpec",
    "Link",
    "Policy",
    "Route",
    "check_link",
    "check_route",
    "check_route_update",
    "resolve_secret_refs",
    "utc_now_iso",
    "validate_name",
]

Kind = Literal["kafka", "pulsar"]
KINDS: tuple[Kind, ...] = ("kafka", "pulsar")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SECRET_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_URL_FIELD: dict[str, str] = {"kafka": "bootstrap.servers", "pulsar": "service_url"}
Scalar = str | int | float | bool


def utc_now_iso() -> str:
    """Current time as ISO 8601 UTC, the format of a route's ``at`` field."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def validate_name(key: str, name: str, what: str) -> str:
    """Names of clusters and routes become etcd key segments and topic prefixes."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError(key, f"invalid {what} name {name!r} (letters, digits, '.', '_', '-')")
    return name


def _load(key: str, raw: bytes | str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError(key, f"malformed JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValidationError(key, f"expected a JSON object, got {type(doc).__name__}")
    return doc


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
        doc = _load(key, raw)
        kind = doc.get("kind")
        if kind not in KINDS:
            raise ValidationError(key, f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
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
        if self.kind == "pulsar":
            if not re.match(r"^pulsar(\+ssl)?://[^/\s]+", self.url):
                raise ValidationError(key, f"service_url must look like pulsar://host:port, got {self.url!r}")
            return
        for server in self.url.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValidationError(key, f"bootstrap.servers must be host:port[,host:port], got {self.url!r}")

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
        """``(host, port)`` pairs of the brokers named by the URL (for reachability probes)."""
        text = re.sub(r"^pulsar(\+ssl)?://", "", self.url)
        pairs = []
        for server in text.split(","):
            host, _, port = server.strip().rstrip("/").rpartition(":")
            pairs.append((host.strip("[]"), int(port)))
        return pairs


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """``<ns>/routes/<name>``: which of a set of replicated clusters applications use now.

    ``epoch`` only grows; clients never apply an epoch lower than or equal to one they have.
    """

    name: str
    active: str
    clusters: tuple[str, ...]
    epoch: int
    reason: str = ""
    by: str = ""
    at: str = ""

    @classmethod
    def from_json(cls, name: str, raw: bytes | str, *, key: str | None = None) -> Route:
        key = key or f"routes/{name}"
        validate_name(key, name, "route")
        doc = _load(key, raw)
        clusters = doc.get("clusters")
        if not isinstance(clusters, list) or not clusters or not all(isinstance(c, str) for c in clusters):
            raise ValidationError(key, "'clusters' must be a non-empty list of cluster names")
        if len(set(clusters)) != len(clusters):
            raise ValidationError(key, f"'clusters' lists a cluster twice: {clusters}")
        for c in clusters:
            validate_name(key, c, "cluster")
        active = doc.get("active")
        if not isinstance(active, str) or active not in clusters:
            raise ValidationError(key, f"'active' must be one of {clusters}, got {active!r}")
        epoch = doc.get("epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValidationError(key, f"'epoch' must be a non-negative integer, got {epoch!r}")
        texts = {f: doc.get(f, "") for f in ("reason", "by", "at")}
        for f, v in texts.items():
            if not isinstance(v, str):
                raise ValidationError(key, f"'{f}' must be a string")
        return cls(name=name, active=active, clusters=tuple(clusters), epoch=epoch, **texts)

    def to_json(self) -> str:
        return json.dumps(
            {
                "active": self.active,
                "clusters": list(self.clusters),
                "epoch": self.epoch,
                "reason": self.reason,
                "by": self.by,
                "at": self.at,
            }
        )

    def flipped(self, to: str, *, reason: str = "", by: str = "") -> Route:
        """The route after a switch to ``to``: next epoch, new audit fields."""
        return replace(self, active=to, epoch=self.epoch + 1, reason=reason, by=by, at=utc_now_iso())


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
        doc = _load(key, raw)
        policy = doc.get("policy", "prefix")
        if policy not in ("prefix", "identity"):
            raise ValidationError(key, f"'policy' must be 'prefix' or 'identity', got {policy!r}")
        separator = doc.get("separator", ".")
        if not isinstance(separator, str) or not separator:
            raise ValidationError(key, "'separator' must be a non-empty string")
        location = doc.get("offset_syncs", "source")
        if location not in ("source", "target"):
            raise ValidationError(key, f"'offset_syncs' must be 'source' or 'target', got {location!r}")
        replicator = doc.get("replicator", "")
        if not isinstance(replicator, str):
            raise ValidationError(key, "'replicator' must be a string")
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


def check_route(route: Route, clusters: Mapping[str, ClusterSpec], *, key: str | None = None) -> None:
    """Every cluster of the route is defined, and all are of one kind."""
    key = key or f"routes/{route.name}"
    for name in route.clusters:
        if name not in clusters:
            raise UnknownClusterError(f"{key}: unknown cluster {name!r}")
    kinds = {clusters[name].kind for name in route.clusters}
    if len(kinds) > 1:
        raise ValidationError(key, f"clusters of different kinds in one route: {sorted(kinds)}")


def check_route_update(current: Route | None, new: Route, *, key: str | None = None) -> None:
    """A route update must move the epoch forward (fencing against stale writers and events)."""
    if current is not None and new.epoch <= current.epoch:
        raise StaleEpochError(
            key or f"routes/{new.name}",
            f"epoch {new.epoch} is not greater than the current epoch {current.epoch}",
        )


def check_link(link: Link, clusters: Mapping[str, ClusterSpec], *, key: str | None = None) -> None:
    """Both ends are defined clusters of the same kind."""
    key = key or f"links/{link.source}/{link.target}"
    for name in (link.source, link.target):
        if name not in clusters:
            raise UnknownClusterError(f"{key}: unknown cluster {name!r}")
    if clusters[link.source].kind != clusters[link.target].kind:
        raise ValidationError(key, "a link joins two clusters of the same kind")
