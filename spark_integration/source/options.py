"""The data source's options: Spark's Kafka source names where they mean the same, plus the
``hotstandby.*`` failover keys.

Spark hands options over as strings with case-insensitive keys; they are read once, on the
driver, into a :class:`SourceOptions` that travels (pickled) to the executors.

==================================  ========  ================================================
option                              default   meaning
==================================  ========  ================================================
``hotstandby.route``                required  the route whose active cluster is read
``hotstandby.group``                required  the query's ledger name (streaming; one per query)
                                    for       and its Kafka group id (progress is committed
                                    streams   there, so MirrorMaker 2 checkpoints translate it)
``hotstandby.etcd``                 env/def.  config center endpoints
``hotstandby.namespace``            env/def.  config center namespace
``hotstandby.etcd.timeout.ms``      env/def.  etcd calls' timeout
``hotstandby.drain.timeout.ms``     10000     a planned switch: time to finish the old cluster
``hotstandby.timestamp.skew.ms``    5000      margin of the timestamp-seek fallback
``hotstandby.dedupe``               true      batch reads: one row per ``hs_id``
``hotstandby.clusters.allowed``     any       the clusters the query may read (comma-separated)
``hotstandby.etcd.ca`` ...          env/none  etcd's TLS and credentials (hotstandby.etcd_security)
``subscribe``                       one of    comma-separated logical topics
``subscribePattern``                these     a regular expression over logical topic names
``assign``                          three     JSON ``{"topic": [0, 1]}``
``startingOffsets``                 latest    ``earliest``, ``latest`` or JSON (batch: earliest);
                                              Pulsar: ``{"topic": [serialized id bytes]}``
``endingOffsets``                   latest    batch reads: ``latest`` or JSON
``startingTimestamp``               none      ms since the epoch: start at the first record then
``maxOffsetsPerTrigger``            none      records per micro-batch (all partitions)
``minPartitions``                   none      at least this many Spark partitions per batch
``failOnDataLoss``                  true      fail when planned records are gone (else log)
``includeHeaders``                  false     add the ``headers`` column
``kafkaConsumer.pollTimeoutMs``     120000    an executor gives up on a broker that sends nothing
``kafka.*``                                   passed to the Kafka client (prefix removed)
``topic`` / ``topics`` / ``topicsPattern``    Pulsar routes: as the Pulsar connector names them
``pulsar.client.*``, ``pulsar.reader.*``      keyword arguments of pulsar.Client, create_reader
==================================  ========  ================================================

``kafka.bootstrap.servers`` (and any setting that names a cluster) is refused: the route
decides which cluster is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hotstandby.adapter import cluster_keys
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.etcd_security import ETCD_SECURITY_KEYS, etcd_security_args
from hotstandby.failover.client_options import parse_allowed
from hotstandby.settings import Settings
from hotstandby.spark_integration.source.offsets import read_positions

__all__ = ["EARLIEST", "LATEST", "MessageIds", "SourceOptions", "keyword_value", "parse_options"]

EARLIEST = "earliest"
LATEST = "latest"

_HS = "hotstandby."
_KNOWN_HS = frozenset(
    _HS + k
    for k in (
        "route",
        "group",
        "etcd",
        "namespace",
        "etcd.timeout.ms",
        "drain.timeout.ms",
        "timestamp.skew.ms",
        "dedupe",
        "clusters.allowed",
        *ETCD_SECURITY_KEYS,
    )
)
_KNOWN = frozenset(
    {
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "maxoffsetspertrigger",
        "maxentriespertrigger",
        "minpartitions",
        "failondataloss",
        "includeheaders",
        "kafkaconsumer.polltimeoutms",
        "topic",
        "topics",
        "topicspattern",
    }
)
# What Spark's Kafka source takes that means nothing here: refused rather than ignored.
_REFUSED = {
    "kafka.group.id": "the Kafka group id is hotstandby.group",
    "kafka.auto.offset.reset": "use startingOffsets",
    "kafka.enable.auto.commit": "the source commits its progress itself",
}


def _flag(key: str, value: str | None, default: bool) -> bool:
    if value is None:
        return default
    text = value.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValidationError(key, f"expected true or false, got {value!r}")


def _count(key: str, value: str | None, *, positive: bool = True) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValidationError(key, f"expected an integer, got {value!r}") from None
    if number < (1 if positive else 0):
        raise ValidationError(key, f"must be {'positive' if positive else 'at least 0'}, got {number}")
    return number


def _entries(text: str | None) -> int | None:
    """``maxEntriesPerTrigger``: a positive count, or -1 (the Pulsar connector's "no cap")."""
    if text is not None and text.strip() == "-1":
        return None
    return _count("maxEntriesPerTrigger", text)


def keyword_value(text: str) -> Any:
    """A ``pulsar.client.*`` / ``pulsar.reader.*`` option as the keyword argument it stands for."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _millis(raw: Mapping[str, str], key: str, default: int) -> int:
    value = _count(key, raw.get(key), positive=False)
    return default if value is None else value


def _positions(key: str, value: str | None, default: str) -> str | dict[str, dict[int, int]] | MessageIds:
    """``earliest``, ``latest``, Spark's JSON ``{"topic": {"0": 23}}`` (-2 earliest, -1 latest),
    or the Pulsar connector's ``{"topic": [8, 11, 16, 101]}`` (:class:`MessageIds`)."""
    text = (value or default).strip()
    if text.lower() in (EARLIEST, LATEST):
        return text.lower()
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValidationError(key, f"expected earliest, latest or JSON, got {text[:60]!r}") from None
    if isinstance(doc, dict) and doc and all(isinstance(v, list | str) for v in doc.values()):
        return _message_ids(key, doc)
    out = read_positions(key, doc)
    for topic, parts in out.items():
        if any(o < -2 for o in parts.values()):
            raise ValidationError(key, f"topic {topic!r}: an offset below -2")
    return out


@dataclass(frozen=True)
class MessageIds:
    """Pulsar start positions: per topic (or partition) name, as given, ``earliest``, ``latest`` or
    the hex of a serialized message id (reading starts after that message)."""

    ids: Mapping[str, str]


def _message_ids(key: str, doc: Mapping[str, Any]) -> MessageIds:
    out: dict[str, str] = {}
    for topic, value in doc.items():
        if isinstance(value, str) and value.lower() in (EARLIEST, LATEST):
            out[str(topic)] = value.lower()
        elif isinstance(value, list) and value and all(type(b) is int and -128 <= b <= 255 for b in value):
            out[str(topic)] = bytes(b & 0xFF for b in value).hex()  # Java's signed bytes too
        else:
            raise ValidationError(key, f"topic {topic!r}: expected a serialized message id (a list of bytes), "
                                       "earliest or latest")  # fmt: skip
    return MessageIds(out)


def _assign(value: str) -> dict[str, tuple[int, ...]]:
    try:
        doc = json.loads(value)
    except ValueError:
        raise ValidationError("assign", f'expected JSON {{"topic": [0, 1]}}, got {value[:60]!r}') from None
    if not isinstance(doc, dict) or not all(
        isinstance(p, list) and all(isinstance(i, int) and i >= 0 for i in p) for p in doc.values()
    ):
        raise ValidationError("assign", 'expected JSON {"topic": [0, 1]}')
    return {str(t): tuple(sorted(set(p))) for t, p in doc.items()}


@dataclass(frozen=True, kw_only=True)
class SourceOptions:
    """Everything the source was configured with, checked."""

    route: str
    group: str | None
    settings: Settings
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    starting: str | Mapping[str, Mapping[int, int]] | MessageIds = LATEST
    ending: str | Mapping[str, Mapping[int, int]] = LATEST
    starting_timestamp: int | None = None
    max_per_trigger: int | None = None
    max_entries_per_trigger: int | None = None  # Pulsar routes: the Pulsar connector's cap
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    dedupe: bool = True
    drain_timeout_ms: int = 10_000
    timestamp_skew_ms: int = 5_000
    poll_timeout_ms: int = 120_000
    client: Mapping[str, str] = field(default_factory=dict)
    pulsar_client: Mapping[str, Any] = field(default_factory=dict)
    pulsar_reader: Mapping[str, Any] = field(default_factory=dict)
    allowed_clusters: frozenset[str] = frozenset()  # hotstandby.clusters.allowed; empty: any

    @property
    def trigger_limit(self) -> int | None:
        """The per-trigger cap, whichever the route's kind names it (records or entries)."""
        return self.max_per_trigger or self.max_entries_per_trigger

    def wants(self, logical: str) -> bool:
        """Whether the subscription covers logical topic ``logical``."""
        if self.topics:
            return logical in self.topics
        if self.assign:
            return logical in self.assign
        return self.pattern is not None and re.fullmatch(self.pattern, logical) is not None

    def wants_partition(self, logical: str, partition: int) -> bool:
        return self.wants(logical) and (not self.assign or partition in self.assign[logical])

    def require_group(self) -> str:
        if not self.group:
            raise ValidationError(
                _HS + "group", "required for a streaming read: the name the query's ledger is kept under"
            )
        return self.group


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check the options Spark passed (keys in any case) and build :class:`SourceOptions`."""
    raw = {str(k).lower(): str(v) for k, v in options.items() if k.lower() != "path"}
    for key in sorted(raw):
        if key.startswith("kafka."):
            inner = key[len("kafka.") :]
            if inner in {k.lower() for k in cluster_keys()}:
                raise ConfigError(f"{key!r} must not be set: the cluster comes from route {raw.get(_HS + 'route')!r}")
            if key in _REFUSED:
                raise ConfigError(f"{key!r} is not supported: {_REFUSED[key]}")
        elif key.startswith(("pulsar.client.", "pulsar.reader.")):
            if key.rsplit(".", 1)[-1] in ("service_url", "serviceurl"):
                raise ConfigError(f"{key!r} must not be set: the cluster comes from the route")
        elif key.startswith(_HS):
            if key not in _KNOWN_HS:
                raise ValidationError(key, f"unknown option; known: {', '.join(sorted(_KNOWN_HS))}")
        elif key in {k.lower() for k in cluster_keys()} or key in ("service.url", "serviceurl"):
            raise ConfigError(f"{key!r} must not be set: the cluster comes from the route")
        elif key not in _KNOWN:
            raise ValidationError(key, "unknown option (see docs/spark.md)")
    route = raw.get(_HS + "route", "").strip()
    if not route:
        raise ValidationError(_HS + "route", "required: the route whose active cluster is read")
    chosen = [k for k in ("subscribe", "subscribepattern", "assign", "topic", "topics", "topicspattern") if k in raw]
    if len(chosen) != 1:
        raise ValidationError(
            "subscribe",
            "give exactly one of subscribe, subscribePattern or assign (Pulsar: topic, topics or topicsPattern)",
        )
    named = raw.get("subscribe", raw.get("topics", raw.get("topic", "")))
    topics = tuple(t.strip() for t in named.split(",") if t.strip())
    if chosen[0] in ("subscribe", "topic", "topics") and not topics:
        raise ValidationError(chosen[0], "no topic given")
    pattern = raw.get("subscribepattern", raw.get("topicspattern"))
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValidationError("subscribePattern", f"not a regular expression: {exc}") from None
    if "endingoffsets" in raw and streaming:
        raise ValidationError("endingOffsets", "only for batch reads (spark.read)")
    if "startingoffsets" in raw and "startingtimestamp" in raw:
        raise ValidationError("startingTimestamp", "give startingOffsets or startingTimestamp, not both")
    ending = _positions("endingOffsets", raw.get("endingoffsets"), LATEST)
    if isinstance(ending, MessageIds):
        raise ValidationError("endingOffsets", "message ids are not supported as ending offsets")
    if ending == EARLIEST or (isinstance(ending, dict) and any(-2 in parts.values() for parts in ending.values())):
        raise ValidationError("endingOffsets", "earliest (-2) is not allowed as an ending offset")
    group = raw.get(_HS + "group", "").strip() or None
    result = SourceOptions(
        route=route,
        group=group,
        settings=Settings.resolve(
            etcd=raw.get(_HS + "etcd"),
            namespace=raw.get(_HS + "namespace"),
            etcd_timeout=(_count(_HS + "etcd.timeout.ms", raw.get(_HS + "etcd.timeout.ms")) or 0) / 1000 or None,
            **etcd_security_args(raw, _HS),
        ),
        topics=topics,
        pattern=pattern,
        assign=_assign(raw["assign"]) if "assign" in raw else {},
        starting=_positions("startingOffsets", raw.get("startingoffsets"), LATEST if streaming else EARLIEST),
        ending=ending,
        starting_timestamp=_count("startingTimestamp", raw.get("startingtimestamp"), positive=False),
        max_per_trigger=_count("maxOffsetsPerTrigger", raw.get("maxoffsetspertrigger")),
        max_entries_per_trigger=_entries(raw.get("maxentriespertrigger")),
        min_partitions=_count("minPartitions", raw.get("minpartitions")),
        fail_on_data_loss=_flag("failOnDataLoss", raw.get("failondataloss"), True),
        include_headers=_flag("includeHeaders", raw.get("includeheaders"), False),
        dedupe=_flag(_HS + "dedupe", raw.get(_HS + "dedupe"), True),
        drain_timeout_ms=_millis(raw, _HS + "drain.timeout.ms", 10_000),
        timestamp_skew_ms=_millis(raw, _HS + "timestamp.skew.ms", 5_000),
        poll_timeout_ms=_count("kafkaConsumer.pollTimeoutMs", raw.get("kafkaconsumer.polltimeoutms")) or 120_000,
        client={k[len("kafka.") :]: v for k, v in raw.items() if k.startswith("kafka.")},
        pulsar_client={
            k[len("pulsar.client.") :]: keyword_value(v) for k, v in raw.items() if k.startswith("pulsar.client.")
        },
        pulsar_reader={
            k[len("pulsar.reader.") :]: keyword_value(v) for k, v in raw.items() if k.startswith("pulsar.reader.")
        },
        allowed_clusters=parse_allowed(raw.get(_HS + "clusters.allowed")),
    )
    if streaming:
        result.require_group()
    return result
