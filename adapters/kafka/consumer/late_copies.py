"""Remote copies that appear after the consumer subscribed.

A replicator creates a topic's copy at its next topic refresh (MirrorMaker 2's
``refresh.topics.interval.seconds``: 600 s by default), so a consumer may subscribe — at its
start, or on the cluster a switch moved it to — before the copy exists. librdkafka says once
that a subscribed topic is missing and, once the member holds any partition, looks for it
again only at its periodic metadata refresh (``topic.metadata.refresh.interval.ms``, five
minutes by default). What the group had not read of the old cluster at a switch exists there
only in the copy, and would wait that long.

So while a subscribed copy is missing, the consumer asks the cluster about it, at growing
intervals, through the process's admin client (a request waiting on the consumer's own handle
would hold its fetches), and once it is there has its handle refresh the metadata of every
topic: the group then assigns the copy, as at librdkafka's own refresh. Nothing is asked while
every copy exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from confluent_kafka import TopicCollection

from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.configcenter.documents import ClusterSpec

__all__ = ["LateCopies"]

_FIRST_S = 1.0  # the first question, after the missing copy was announced
_LONGEST_S = 30.0  # the interval stops growing there
_ANSWER_S = 10.0  # a question not answered by then is asked again later


class LateCopies:
    """The subscribed copies a cluster did not have, and the questions about them (not thread
    safe: the consumer's lock guards it)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._missing: set[str] = set()
        self._asked: dict[str, Future[Any]] = {}
        self._asked_at = 0.0
        self._next = 0.0
        self._interval = _FIRST_S

    def forget(self) -> None:
        """A new subscription: what is missing there is announced anew."""
        self._missing.clear()
        self._asked = {}

    def missing(self, topics: Iterable[str]) -> None:
        """librdkafka announced the subscribed copies ``topics`` as not there."""
        new = set(topics) - self._missing
        if new and not self._missing:
            self._next, self._interval = self._clock() + _FIRST_S, _FIRST_S
        self._missing |= new

    def appeared(self, spec: ClusterSpec) -> set[str]:
        """The missing copies that exist now on ``spec`` (the caller has librdkafka learn of
        them). Never
        waits: asks, and reads the answer at a later call."""
        if not self._missing:
            return set()
        now = self._clock()
        if self._asked:
            return self._answer(now)
        if now >= self._next:
            self._asked_at = now
            topics = TopicCollection(sorted(self._missing))
            self._asked = shared_admin(spec).describe_topics(topics, request_timeout=_ANSWER_S)
        return set()

    def _answer(self, now: float) -> set[str]:
        if not all(f.done() for f in self._asked.values()) and now - self._asked_at < _ANSWER_S:
            return set()
        # Unknown topic, or the cluster did not answer: ask again later.
        there = {t for t, f in self._asked.items() if f.done() and f.exception() is None}
        self._asked = {}
        self._missing -= there
        self._next = now + self._interval
        self._interval = min(self._interval * 2, _LONGEST_S)
        return there
