"""Pulsar topic names, and the topics one subscription reads: a topic, a list of topics or a
pattern, as :meth:`pulsar.Client.subscribe` takes them.

Acknowledgements are kept per *logical* topic (a partitioned topic's partitions share its
name) in the ack ledger: a consumer of one topic keeps them under the name it was given, one
of a list under the listed name a message's topic has, one of a pattern under the full name
(``persistent://tenant/namespace/topic``: a pattern names no topic itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pulsar

from hotstandby.logs import get_logger

__all__ = ["TopicSelection", "full_topic", "logical_partition", "matching", "names", "subscribe_pattern"]

log = get_logger("hotstandby.pulsar.consumer")

_PARTITION = re.compile(r"^(?P<base>.*)-partition-(?P<index>\d+)$")
_DOMAINS = {
    pulsar.RegexSubscriptionMode.PersistentOnly: ("persistent://",),
    pulsar.RegexSubscriptionMode.NonPersistentOnly: ("non-persistent://",),
    pulsar.RegexSubscriptionMode.AllTopics: ("persistent://", "non-persistent://"),
}


def full_topic(name: str) -> str:
    """``name`` as Pulsar's full topic name, as pulsar-client completes it: a short name is in
    public/default, ``tenant/namespace/topic`` (and the old ``tenant/cluster/namespace/topic``)
    is persistent."""
    if "://" in name:
        return name
    return f"persistent://{name}" if "/" in name else f"persistent://public/default/{name}"


def logical_partition(topic: str) -> tuple[str, int]:
    """``(topic, partition)`` of one partition's topic name (a non-partitioned topic: 0)."""
    found = _PARTITION.match(topic)
    return (found["base"], int(found["index"])) if found else (topic, 0)


def matching(
    pattern: re.Pattern[str],
    topics: Iterable[str],
    mode: pulsar.RegexSubscriptionMode = pulsar.RegexSubscriptionMode.PersistentOnly,
) -> list[str]:
    """The full names of ``topics`` that ``pattern`` matches as a whole, of the domains
    ``mode`` subscribes to, sorted."""
    domains = _DOMAINS[mode]
    found = {full_topic(t) for t in topics}
    return sorted(t for t in found if t.startswith(domains) and names(pattern, t))


def names(pattern: re.Pattern[str], full_name: str) -> bool:
    """Whether ``pattern`` matches the topic ``full_name`` as a whole: a pattern without a domain
    (``public/default/orders-.*``, as pulsar-client takes it) matches the name without one."""
    name = full_name if "://" in pattern.pattern else full_name.split("://", 1)[-1]
    return pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class TopicSelection:
    """What a subscription reads: one topic (:attr:`single`), a list (:attr:`listed`) or a
    pattern (:attr:`pattern`)."""

    single: str | None = None
    listed: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    # Full name of a partition's (or topic's) topic -> its logical topic (filled as messages come).
    _logical: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, topic: object) -> TopicSelection:
        """``subscribe``'s ``topic``: raises ``ValueError`` as pulsar-client does for anything else."""
        if isinstance(topic, str):
            return cls(single=topic)
        if isinstance(topic, list) and all(isinstance(t, str) for t in topic):
            return cls(listed=tuple(topic))
        if isinstance(topic, re.Pattern) and isinstance(topic.pattern, str):
            return cls(pattern=topic)
        raise ValueError("Argument 'topic' is expected to be of a type between (str, list, re.pattern)")

    @property
    def key(self) -> Hashable:
        """Tells selections apart (a single topic: its name)."""
        if self.single is not None:
            return self.single
        if self.pattern is not None:
            return ("pattern", self.pattern.pattern, self.pattern.flags)
        return ("list", self.listed)

    @property
    def name(self) -> str:
        """For events: the topic, the listed topics, or the pattern."""
        if self.single is not None:
            return self.single
        return self.pattern.pattern if self.pattern is not None else ",".join(self.listed)

    def covers(self, logical: str) -> bool:
        """Whether acknowledgements kept under ``logical`` are this selection's."""
        if self.single is not None:
            return logical == self.single
        if self.pattern is not None:
            return "://" in logical and names(self.pattern, logical)
        return logical in self.listed

    def logical(self, topic_name: str) -> str:
        """The logical topic of a message from ``topic_name`` (what ``topic_name()`` returns)."""
        if self.single is not None:
            return self.single
        found = self._logical.get(topic_name)
        if found is None:
            base = logical_partition(topic_name)[0]
            if self.pattern is None:
                listed = {full_topic(t): t for t in self.listed}
                base = listed.get(full_topic(base), base)
            found = self._logical[topic_name] = base
        return found


def subscribe_pattern(
    client: pulsar.Client,
    pattern: re.Pattern[str],
    subscription: str,
    kwargs: dict[str, Any],
    *,
    cluster: str,
    registered: Callable[[], Iterable[str]],
) -> pulsar.Consumer:
    """A consumer of the topics ``pattern`` matches on one cluster. When the config center
    registers topics for ``cluster`` (``registered``: what is done for brokers that cannot list
    their topics, as the reference broker, which answers no GetTopicsOfNamespace), the pattern
    matches those, once; else the broker lists them — pulsar-client's pattern consumer, which
    also finds topics created later."""
    known = list(registered())
    if not known:
        return client.subscribe(pattern, subscription, **kwargs)
    mode = kwargs.get("regex_subscription_mode", pulsar.RegexSubscriptionMode.PersistentOnly)
    topics = matching(pattern, known, mode)
    log.info("consumer.pattern_resolved", cluster=cluster, pattern=pattern.pattern, subscription=subscription,
             topics=len(topics), source="config center")  # fmt: skip
    return client.subscribe(topics, subscription, **kwargs)
