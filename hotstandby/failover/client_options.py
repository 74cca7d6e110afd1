"""The ``hotstandby.*`` keys of a client's configuration dict.

A drop-in facade takes the client library's usual configuration plus these keys; they are
removed before the rest is passed, untouched, to the client library. ``bootstrap.servers``
(or a service URL: any setting an adapter names in ``cluster_keys``) must not be given: it
comes from the route's active cluster.

==================================  ========  ==============================================
key                                 default   meaning
==================================  ========  ==============================================
``hotstandby.route``                required  the route whose active cluster the client uses
``hotstandby.etcd``                 env/def.  config center endpoints (see Settings)
``hotstandby.namespace``            env/def.  config center namespace
``hotstandby.etcd.timeout.ms``      env/def.  etcd calls' timeout; creating a client waits this
                                              long for an unreachable etcd, then fails
``hotstandby.etcd.ca``, ``.cert``,   env/none  etcd's TLS and credentials
``.key``, ``.user``, ``.password``,             (:mod:`hotstandby.etcd_security`)
``.password.file``
``hotstandby.client.id``            random    name in logs and in ``hotstandby status ROUTE``
``hotstandby.replay.window.ms``     60000     acknowledged records kept for re-sending
``hotstandby.replay.window.bytes``  33554432  ... and at most this many bytes of them
``hotstandby.drain.timeout.ms``     10000     planned switch: time to finish on the old cluster
``hotstandby.partitioner``          by kind   keyed partitioner (murmur2, crc32, java-string)
``hotstandby.timestamp.skew.ms``    5000      clock-skew margin (timestamp seeks, replay trim)
``hotstandby.on_switch``            none      a callable given each
                                              :class:`~hotstandby.failover.switch_events.SwitchEvent`
                                              (docs/observability.md)
==================================  ========  ==============================================
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hotstandby.adapter import cluster_keys
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.etcd_security import ETCD_SECURITY_KEYS, etcd_security_args
from hotstandby.failover.switch_events import OnSwitch
from hotstandby.settings import Settings

__all__ = ["PREFIX", "ClientOptions"]

PREFIX = "hotstandby."


def _int(config: Mapping[str, Any], key: str, default: int) -> int:
    value = config.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(key, f"expected an integer, got {value!r}") from None
    if number < 0:
        raise ValidationError(key, f"must not be negative, got {number}")
    return number


def _timeout_s(config: Mapping[str, Any], key: str) -> float | None:
    """A positive number of milliseconds as seconds (None when not given)."""
    if key not in config:
        return None
    millis = _int(config, key, 0)
    if millis == 0:
        raise ValidationError(key, "must be positive")
    return millis / 1000


def _session(value: object) -> bytes | None:
    if value is None:
        return None
    try:
        session = bytes.fromhex(value) if isinstance(value, str) else None
    except ValueError:
        session = None
    if session is None or len(session) != 16:
        raise ValidationError(PREFIX + "producer.session", f"expected 32 hex digits, got {value!r:.40}")
    return session


def parse_allowed(value: object) -> frozenset[str]:
    """``hotstandby.clusters.allowed``: cluster names, comma-separated (or a list)."""
    if value is None:
        return frozenset()
    names = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else None
    if names is None or not all(isinstance(n, str) for n in names):
        raise ValidationError(PREFIX + "clusters.allowed", f"expected cluster names, got {value!r}")
    allowed = frozenset(n.strip() for n in names if n.strip())
    if not allowed:
        raise ValidationError(PREFIX + "clusters.allowed", "names no cluster")
    return allowed


@dataclass(frozen=True, kw_only=True)
class ClientOptions:
    route: str
    settings: Settings
    client_id: str
    replay_window_ms: int = 60_000
    replay_window_bytes: int = 32 * 1024 * 1024
    drain_timeout_ms: int = 10_000
    partitioner: str = ""  # empty: the system's usual one (see hotstandby.partitioner)
    timestamp_skew_ms: int = 5_000
    #: The clusters this client may be moved to; empty: any the route names.
    allowed_clusters: frozenset[str] = frozenset()
    #: Called with each switch event (on the client's event thread), or None.
    on_switch: OnSwitch | None = None
    #: The producers' identity session (``hotstandby.producer.session``, 32 hex digits); None:
    #: a random one per producer. A writer that writes the same records again in the same
    #: order (the Spark sink's task) sets it, so that the copies carry the same identities.
    producer_session: bytes | None = None

    def allows(self, cluster: str) -> bool:
        return not self.allowed_clusters or cluster in self.allowed_clusters

    @classmethod
    def split(cls, config: Mapping[str, Any], *, role: str) -> tuple[ClientOptions, dict[str, Any]]:
        """``(options, the rest of the config for the client library)``."""
        for key in sorted(cluster_keys()):  # bootstrap.servers, service_url, ...: the adapters say
            if key in config:
                raise ConfigError(
                    f"{key!r} must not be set: the cluster comes from route {config.get(PREFIX + 'route')!r} in the config center"
                )
        route = config.get(PREFIX + "route")
        if not isinstance(route, str) or not route:
            raise ValidationError(PREFIX + "route", "required: the route this client follows")
        known = {f"{PREFIX}{k}" for k in ("route", "etcd", "etcd.timeout.ms", "namespace", "client.id", "replay.window.ms",
                                          "replay.window.bytes", "drain.timeout.ms", "partitioner",
                                          "timestamp.skew.ms", "clusters.allowed", "on_switch", "producer.session",
                                          *ETCD_SECURITY_KEYS)}  # fmt: skip
        unknown = sorted(k for k in config if k.startswith(PREFIX) and k not in known)
        if unknown:
            raise ValidationError(unknown[0], f"unknown setting; known: {', '.join(sorted(known))}")
        on_switch = config.get(PREFIX + "on_switch")
        if on_switch is not None and not callable(on_switch):
            raise ValidationError(PREFIX + "on_switch", f"expected a callable, got {on_switch!r:.40}")
        options = cls(
            route=route,
            settings=Settings.resolve(
                etcd=config.get(PREFIX + "etcd"),
                namespace=config.get(PREFIX + "namespace"),
                etcd_timeout=_timeout_s(config, PREFIX + "etcd.timeout.ms"),
                **etcd_security_args(config, PREFIX),
            ),
            client_id=str(config.get(PREFIX + "client.id") or f"{role}-{uuid.uuid4().hex[:8]}"),
            replay_window_ms=_int(config, PREFIX + "replay.window.ms", 60_000),
            replay_window_bytes=_int(config, PREFIX + "replay.window.bytes", 32 * 1024 * 1024),
            drain_timeout_ms=_int(config, PREFIX + "drain.timeout.ms", 10_000),
            partitioner=str(config.get(PREFIX + "partitioner", "")),
            timestamp_skew_ms=_int(config, PREFIX + "timestamp.skew.ms", 5_000),
            allowed_clusters=parse_allowed(config.get(PREFIX + "clusters.allowed")),
            on_switch=on_switch,
            producer_session=_session(config.get(PREFIX + "producer.session")),
        )
        passthrough = {k: v for k, v in config.items() if not k.startswith(PREFIX)}
        return options, passthrough
