"""The physical topics a Kafka consumer subscribes to on a cluster, and their logical names.

A logical topic is read as itself and as its remote copies, which MM2's default replication
policy names ``<source cluster><separator><topic>`` on the target. A subscription may also
hold patterns — names starting with ``^``, as in confluent-kafka — which librdkafka matches
against the cluster's topics (also topics created later). A pattern subscribes to its matches
and, with each copy prefix put after the ``^``, to their copies; the physical topics it
matches get their logical name when first looked up (a copy's is the name without the
prefix).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hotstandby.configcenter.documents import Link

__all__ = ["PATTERN", "copy_prefixes", "physical_topics"]

PATTERN = "^"  # a subscribed name starting with it is a regular expression (librdkafka)
_SPECIAL = frozenset(".^$*+?()[]{}|\\")


def _escape(text: str) -> str:
    """``text`` as a literal in librdkafka's regular expressions."""
    return "".join(f"\\{c}" if c in _SPECIAL else c for c in text)


class _TopicMap(dict[str, str]):
    """physical -> logical for a subscription with patterns; ``get`` resolves a physical
    topic a pattern matches and keeps it."""

    def __init__(self, fixed: dict[str, str], patterns: list[str], prefixes: Sequence[str]) -> None:
        super().__init__(fixed)
        self._patterns = [re.compile(p) for p in patterns]
        self._prefixes = tuple(prefixes)

    def get(self, key: str, default: Any = None) -> Any:
        found = dict.get(self, key)
        if found is None:
            found = self._resolve(key)
            if found is None:
                return default
            self[key] = found
        return found

    def _resolve(self, physical: str) -> str | None:
        # A name with a copy prefix is a copy (MM2's naming), even if a pattern matches it whole.
        for prefix in self._prefixes:
            if physical.startswith(prefix):
                rest = physical[len(prefix) :]
                return rest if any(p.search(rest) for p in self._patterns) else None
        return physical if any(p.search(physical) for p in self._patterns) else None


def physical_topics(topics: Sequence[str], prefixes: Sequence[str]) -> dict[str, str]:
    """physical topic or pattern -> logical topic, for the subscribed ``topics`` on a cluster
    whose remote copies carry ``prefixes``."""
    out: dict[str, str] = {}
    patterns = [t for t in topics if t.startswith(PATTERN)]
    for topic in topics:
        out[topic] = topic
        for prefix in prefixes:
            if topic.startswith(PATTERN):
                out[PATTERN + _escape(prefix) + topic[len(PATTERN) :]] = topic
            else:
                out[prefix + topic] = topic
    return _TopicMap(out, patterns, prefixes) if patterns else out


def copy_prefixes(clusters: Sequence[str], cluster: str, links: dict[tuple[str, str], Link]) -> list[str]:
    """The prefixes of the remote copies on ``cluster`` of the other ``clusters``' topics
    (``kafka-b.`` on kafka-a), from the replication links into it."""
    prefixes = []
    for other in clusters:
        link = links.get((other, cluster))
        if other != cluster and link is not None and link.policy == "prefix":
            prefixes.append(f"{other}{link.separator}")
    return prefixes
