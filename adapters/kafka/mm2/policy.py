"""MirrorMaker 2 topic naming, internal-topic rules, the cycle rule and the default filters.

``prefix`` is MM2's DefaultReplicationPolicy: topic ``T`` of cluster ``S`` is ``S<sep>T`` on
the target. ``identity`` is IdentityReplicationPolicy: names are kept (except heartbeats,
which are still prefixed), so the policy cannot tell a copy from an original and does not
prevent cycles by itself.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from hotstandby.configcenter.documents import Link
from hotstandby.errors import ValidationError

__all__ = [
    "GROUPS_EXCLUDE_DEFAULT",
    "GROUPS_INCLUDE_DEFAULT",
    "TOPICS_EXCLUDE_DEFAULT",
    "TOPICS_INCLUDE_DEFAULT",
    "NameFilter",
    "ReplicationPolicy",
]

HEARTBEATS = "heartbeats"
TOPICS_INCLUDE_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_INCLUDE_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"


@dataclass(frozen=True, slots=True)
class NameFilter:
    """MM2's include/exclude filter: comma-separated regex lists, whole-name matches."""

    include: str = TOPICS_INCLUDE_DEFAULT
    exclude: str = TOPICS_EXCLUDE_DEFAULT

    @staticmethod
    @functools.lru_cache(maxsize=128)
    def _compile(patterns: str) -> re.Pattern[str] | None:
        parts = [p.strip() for p in patterns.split(",") if p.strip()]
        if not parts:
            return None
        try:
            return re.compile("|".join(f"(?:{p})" for p in parts))
        except re.error as exc:
            raise ValidationError("filter", f"bad pattern {patterns!r}: {exc}") from None

    def matches(self, name: str) -> bool:
        inc, exc = self._compile(self.include), self._compile(self.exclude)
        return bool(inc and inc.fullmatch(name)) and not (exc and exc.fullmatch(name))


@dataclass(frozen=True, slots=True)
class ReplicationPolicy:
    """Names of remote and internal topics for one source cluster alias."""

    kind: Literal["prefix", "identity"] = "prefix"
    separator: str = "."
    #: IdentityReplicationPolicy's ``source.cluster.alias``: the source of every non-heartbeat topic.
    source_alias: str | None = None

    @classmethod
    def for_link(cls, link: Link) -> ReplicationPolicy:
        return cls(kind=link.policy, separator=link.separator, source_alias=link.source)

    # -- remote topics -------------------------------------------------------------------

    def _prefix_source(self, topic: str) -> str | None:
        parts = topic.split(self.separator)
        # Java's String.split drops trailing empty strings; a topic ending with the separator
        # therefore counts its parts without them.
        while parts and parts[-1] == "":
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(HEARTBEATS)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return self.source_alias
        return self._prefix_source(topic)

    def upstream_topic(self, topic: str) -> str | None:
        if self.kind == "identity" and not self._looks_like_heartbeat(topic):
            return topic
        source = self._prefix_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return topic
            topic = upstream

    def is_cycle(self, topic: str, target_alias: str) -> bool:
        """True if ``topic`` already came from ``target_alias`` (MM2 never copies it back)."""
        while True:
            source = self.topic_source(topic)
            if source is None:
                return False
            if source == target_alias:
                return True
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return False
            topic = upstream

    # -- internal topics -----------------------------------------------------------------

    def offset_syncs_topic(self, alias: str) -> str:
        return f"mm2-offset-syncs{self.separator}{alias}{self.separator}internal"

    def checkpoints_topic(self, alias: str) -> str:
        return f"{alias}{self.separator}checkpoints{self.separator}internal"

    @property
    def heartbeats_topic(self) -> str:
        return HEARTBEATS

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == HEARTBEATS

    def is_internal_topic(self, topic: str) -> bool:
        return (
            topic.endswith(f"{self.separator}internal")
            or topic.startswith(("__", "."))
            or topic.endswith(("-internal", ".internal"))
        )

    def should_replicate(self, topic: str, target_alias: str, topics: NameFilter) -> bool:
        """MM2's MirrorSourceConnector rule: filter (or heartbeats), not internal, not a cycle."""
        return (
            (topics.matches(topic) or self.is_heartbeats_topic(topic))
            and not self.is_internal_topic(topic)
            and not self.is_cycle(topic, target_alias)
        )

    def checkpoint_topic_name(self, topic: str, source_alias: str, target_alias: str) -> str:
        """The target-side name a checkpoint uses for source topic ``topic``.

        A topic that came from the target goes back to its original name there
        (``B.orders`` on A is checkpointed as ``orders`` on B); others get the remote name.
        """
        if self.topic_source(topic) == target_alias:
            return self.original_topic(topic)
        return self.format_remote_topic(source_alias, topic)
