"""The sink's options (``df.write.format("hotstandby")``, ``df.writeStream.format(...)``):
Spark's Kafka sink names where they mean the same, plus the ``hotstandby.*`` keys.

==================================  ========  ================================================
option                              default   meaning
==================================  ========  ================================================
``hotstandby.route``                required  the route whose active cluster is written
``hotstandby.etcd``, ``.namespace`` env/def.  config center (as for the source)
``hotstandby.etcd.timeout.ms``      env/def.  etcd calls' timeout
``hotstandby.etcd.ca`` ...          env/none  etcd's TLS and credentials
``hotstandby.writeId``              random    batch writes: the name the rows' identities are
                                              derived from; a write repeated with the same
                                              name writes copies consumers drop
``hotstandby.flush.timeout.ms``     120000    a task's wait for its records' acknowledgements
``topic``                           column    the topic of every row (overrides the column)
``kafka.*``                                   passed to the Kafka producer (prefix removed)
``pulsar.client.*``                           keyword arguments of pulsar.Client
``pulsar.producer.*``                         keyword arguments of create_producer
==================================  ========  ================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hotstandby.adapter import cluster_keys
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.etcd_security import ETCD_SECURITY_KEYS, etcd_security_args
from hotstandby.settings import Settings
from hotstandby.spark_integration.source.options import keyword_value

__all__ = ["SinkOptions", "parse_sink_options"]

_HS = "hotstandby."
_KNOWN_HS = frozenset(
    _HS + k
    for k in ("route", "etcd", "namespace", "etcd.timeout.ms", "writeid", "flush.timeout.ms", *ETCD_SECURITY_KEYS)
)
_PASSED_ON = ("kafka.", "pulsar.client.", "pulsar.producer.")  # prefixes of the clients' own settings
# Given by Spark itself to a streaming sink; not the sink's to check.
_SPARK_OWN = frozenset({"path", "checkpointlocation", "queryname"})


@dataclass(frozen=True, kw_only=True)
class SinkOptions:
    """Everything the sink was configured with, checked."""

    route: str
    settings: Settings
    topic: str | None = None
    write_id: str | None = None
    flush_timeout_ms: int = 120_000
    kafka: Mapping[str, str] = field(default_factory=dict)
    pulsar_client: Mapping[str, Any] = field(default_factory=dict)
    pulsar_producer: Mapping[str, Any] = field(default_factory=dict)


def _millis(key: str, value: str | None, default: int) -> int:
    if value is None:
        return default
    try:
        millis = int(value)
    except ValueError:
        raise ValidationError(key, f"expected milliseconds, got {value!r}") from None
    if millis <= 0:
        raise ValidationError(key, "must be positive")
    return millis


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the options Spark passed (keys in any case) and build :class:`SinkOptions`."""
    raw = {str(k).lower(): str(v) for k, v in options.items() if str(k).lower() not in _SPARK_OWN}
    refused = {k.lower() for k in cluster_keys()} | {"service.url", "serviceurl"}
    for key in sorted(raw):
        inner = next((key[len(p) :] for p in _PASSED_ON if key.startswith(p)), key)
        if inner in refused or inner == "service_url":
            raise ConfigError(f"{key!r} must not be set: the cluster comes from route {raw.get(_HS + 'route')!r}")
        if key.startswith(_HS) and key not in _KNOWN_HS:
            raise ValidationError(key, f"unknown option; known: {', '.join(sorted(_KNOWN_HS))}")
        if not key.startswith((_HS, *_PASSED_ON)) and key != "topic":
            raise ValidationError(key, "unknown sink option (see docs/spark.md)")
    route = raw.get(_HS + "route", "").strip()
    if not route:
        raise ValidationError(_HS + "route", "required: the route whose active cluster is written")
    timeout = raw.get(_HS + "etcd.timeout.ms")
    return SinkOptions(
        route=route,
        settings=Settings.resolve(
            etcd=raw.get(_HS + "etcd"),
            namespace=raw.get(_HS + "namespace"),
            etcd_timeout=_millis(_HS + "etcd.timeout.ms", timeout, 0) / 1000 if timeout else None,
            **etcd_security_args(raw, _HS),
        ),
        topic=(raw.get("topic") or "").strip() or None,
        write_id=(raw.get(_HS + "writeid") or "").strip() or None,
        flush_timeout_ms=_millis(_HS + "flush.timeout.ms", raw.get(_HS + "flush.timeout.ms"), 120_000),
        kafka={k[len("kafka.") :]: v for k, v in raw.items() if k.startswith("kafka.")},
        pulsar_client={
            k[len("pulsar.client.") :]: keyword_value(v) for k, v in raw.items() if k.startswith("pulsar.client.")
        },
        pulsar_producer={
            k[len("pulsar.producer.") :]: keyword_value(v) for k, v in raw.items() if k.startswith("pulsar.producer.")
        },
    )
