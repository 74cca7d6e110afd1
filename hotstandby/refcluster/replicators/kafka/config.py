"""Configuration of one replication flow (source cluster -> target cluster)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from hotstandby.adapters.kafka.mm2.policy import (
    GROUPS_EXCLUDE_DEFAULT,
    GROUPS_INCLUDE_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    TOPICS_INCLUDE_DEFAULT,
    NameFilter,
    ReplicationPolicy,
)
from hotstandby.adapters.kafka.mm2.syncs import OFFSET_LAG_MAX_DEFAULT
from hotstandby.errors import ValidationError

__all__ = ["MM2_DEFAULT_INTERVALS", "Endpoint", "FlowConfig", "Intervals"]


@dataclass(frozen=True)
class Endpoint:
    """One side of a flow: the cluster alias (its name) and how to reach it."""

    alias: str
    bootstrap: str
    producer: dict[str, Any] = field(default_factory=dict)
    consumer: dict[str, Any] = field(default_factory=dict)
    admin: dict[str, Any] = field(default_factory=dict)  # the cluster's settings (TLS, SASL) for admin requests


@dataclass(frozen=True)
class Intervals:
    """Periods in seconds, named after the MM2 / Connect settings they stand for."""

    emit_checkpoints: float = 60.0  # emit.checkpoints.interval.seconds
    emit_heartbeats: float = 1.0  # emit.heartbeats.interval.seconds
    offset_flush: float = 60.0  # Connect offset.flush.interval.ms: held-back offset syncs are sent then
    refresh_topics: float = 600.0  # refresh.topics.interval.seconds
    refresh_groups: float = 600.0  # refresh.groups.interval.seconds


MM2_DEFAULT_INTERVALS = Intervals()


@dataclass(frozen=True)
class FlowConfig:
    """Everything one replicator process needs."""

    source: Endpoint
    target: Endpoint
    policy: Literal["prefix", "identity"] = "prefix"
    separator: str = "."
    topics_include: str = TOPICS_INCLUDE_DEFAULT
    topics_exclude: str = TOPICS_EXCLUDE_DEFAULT
    groups_include: str = GROUPS_INCLUDE_DEFAULT
    groups_exclude: str = GROUPS_EXCLUDE_DEFAULT
    offset_lag_max: int = OFFSET_LAG_MAX_DEFAULT
    offset_syncs_location: Literal["source", "target"] = "source"
    intervals: Intervals = field(default_factory=Intervals)
    status_path: str = ""

    @property
    def name(self) -> str:
        return f"{self.source.alias}->{self.target.alias}"

    @property
    def replication_policy(self) -> ReplicationPolicy:
        return ReplicationPolicy(kind=self.policy, separator=self.separator, source_alias=self.source.alias)

    @property
    def topic_filter(self) -> NameFilter:
        return NameFilter(self.topics_include, self.topics_exclude)

    @property
    def group_filter(self) -> NameFilter:
        return NameFilter(self.groups_include, self.groups_exclude)

    @property
    def progress_topic(self) -> str:
        """Where Connect (and so MM2) keeps source offsets: on the target cluster."""
        return f"mm2-offsets{self.separator}{self.source.alias}{self.separator}internal"

    def overridden_intervals(self) -> dict[str, dict[str, float]]:
        """Intervals that differ from MM2's defaults (``refcluster status`` shows them)."""
        mine, default = asdict(self.intervals), asdict(MM2_DEFAULT_INTERVALS)
        return {k: {"value": v, "mm2_default": default[k]} for k, v in mine.items() if v != default[k]}

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def load(cls, path: str | Path) -> FlowConfig:
        try:
            doc = json.loads(Path(path).read_text())
            doc["source"] = Endpoint(**doc["source"])
            doc["target"] = Endpoint(**doc["target"])
            doc["intervals"] = Intervals(**doc.get("intervals", {}))
            config = cls(**doc)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ValidationError(str(path), f"not a replication flow config: {exc}") from None
        if config.policy not in ("prefix", "identity") or config.offset_syncs_location not in ("source", "target"):
            raise ValidationError(str(path), "policy must be prefix|identity, offset_syncs_location source|target")
        return config
