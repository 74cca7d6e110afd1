"""Where a Kafka consumer starts, per partition, on the cluster it moved to.

Candidates for a physical partition on the new cluster ``N`` (see hotstandby.translation):

* exact — the group's committed offset on ``N``;
* exact — for a copy ``S.T`` of cluster ``S``'s topic ``T``: the newest MirrorMaker 2
  checkpoint of the group on ``N`` (``S.checkpoints.internal``), which maps the group's
  committed offset on ``S`` to the copy;
* exact — for such a copy: the group's position on ``S`` when it left, translated through the
  flow's offset syncs as MM2's checkpoint task translates (MM2 emits a checkpoint only every
  ``emit.checkpoints.interval.seconds`` and after it noticed the group; the syncs are there at
  once). They live on ``S`` by default (``offset-syncs.topic.location``), so this needs ``S``
  to answer: a planned switch;
* exact — for ``T`` itself, when the group read ``T``'s records on ``S`` as the copy ``N.T``
  (failback): reverse translation of that position through the offset syncs flow ``N -> S``
  keeps on ``N`` (what MirrorMaker 2 lacks);
* fallback — a timestamp seek: the timestamp of the last record this consumer processed of
  the same stream, minus ``hotstandby.timestamp.skew.ms`` (records are in timestamp order
  within that margin, so everything before was processed);
* fallback — the beginning of the partition.

The furthest exact candidate wins; the ack ledger filters whatever is read again. Every
lookup waits a bounded time and declines when the cluster does not answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from hotstandby.adapters.kafka.mm2.codec import Checkpoint, OffsetSync
from hotstandby.adapters.kafka.mm2.policy import ReplicationPolicy
from hotstandby.adapters.kafka.mm2.read_partition import read_to_end
from hotstandby.adapters.kafka.mm2.translate import from_checkpoints, from_syncs, reverse
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.errors import FormatError
from hotstandby.failover.translation import Proposal, Strategy, choose
from hotstandby.logs import get_logger

__all__ = ["StartPositions", "Visit"]

log = get_logger("hotstandby.kafka.consumer")

_LOOKUP_TIMEOUT_S = 5.0
_MISSING = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART})
Slot = tuple[str, int]


@dataclass
class Visit:
    """What the consumer knew when it left a cluster: where it was, and record timestamps."""

    cluster: str
    positions: dict[Slot, int] = field(default_factory=dict)  # physical slot -> next offset
    timestamps: dict[Slot, int] = field(default_factory=dict)  # physical slot -> last processed ts


class StartPositions:
    """Start positions on ``spec`` for a consumer of ``group`` that has just left ``previous``."""

    def __init__(
        self, *, group: str, spec: ClusterSpec, previous: Visit, links: dict[tuple[str, str], Link],
        skew_ms: int, consumer: RawConsumer, previous_spec: ClusterSpec | None = None,
    ) -> None:  # fmt: skip
        """``previous_spec``: the cluster left, when it answered at the switch (None: it did
        not, and nothing is looked up there)."""
        self.group = group
        self.spec = spec
        self.previous = previous
        self._previous_spec = previous_spec
        self._links = links
        self._skew_ms = skew_ms
        self._consumer = consumer
        self._cache: dict[tuple[str, str, str], list[Any]] = {}

    def _policy(self, source: str, target: str) -> ReplicationPolicy | None:
        link = self._links.get((source, target))
        return ReplicationPolicy.for_link(link) if link is not None and link.policy == "prefix" else None

    def _read(
        self, kind: str, topic: str, decode: Callable[[bytes, bytes], Any], on: ClusterSpec | None = None
    ) -> list[Any]:
        """Records of an MM2 internal topic on the new cluster, or ``on`` another (read once per switch)."""
        spec = on or self.spec
        if (kind, spec.name, topic) not in self._cache:
            out = []
            # The cluster's own client settings: a TLS or SASL cluster is read as its clients read it.
            config = {**spec.client_config("consumer"), "bootstrap.servers": spec.url,
                      "group.id": "__hotstandby-lookup"}  # fmt: skip
            try:
                for msg in read_to_end(config, topic, timeout=_LOOKUP_TIMEOUT_S):
                    try:
                        out.append(decode(msg.key() or b"", msg.value() or b""))
                    except FormatError:
                        continue
            except KafkaException as exc:
                if exc.args[0].code() not in _MISSING:  # a topic MM2 never wrote holds nothing
                    log.info("consumer.lookup_failed", cluster=spec.name, topic=topic, error=str(exc))
            except TimeoutError as exc:
                log.info("consumer.lookup_failed", cluster=spec.name, topic=topic, error=str(exc))
            self._cache[(kind, spec.name, topic)] = out
        return self._cache[(kind, spec.name, topic)]

    # -- candidates ------------------------------------------------------------------------

    def _committed(self, topic: str, partition: int) -> Proposal | None:
        try:
            (tp,) = self._consumer.committed([TopicPartition(topic, partition)], timeout=_LOOKUP_TIMEOUT_S)
        except KafkaException:
            return None
        return Proposal(tp.offset, "committed", self.spec.name) if tp.offset >= 0 else None

    def _checkpoint(self, source: str, topic: str, partition: int) -> Proposal | None:
        policy = self._policy(source, self.spec.name)
        if policy is None:
            return None
        checkpoints = self._read("checkpoints", policy.checkpoints_topic(source), Checkpoint.decode)
        found: Proposal | None = from_checkpoints(checkpoints, self.group, topic, partition)
        return found

    def _forward(self, source: str, topic: str, partition: int, logical: str) -> Proposal | None:
        """The group's position on ``source``'s ``logical`` when it left, through the offset syncs."""
        link = self._links.get((source, self.spec.name))
        policy = self._policy(source, self.spec.name)
        position = self.previous.positions.get((logical, partition))
        if link is None or policy is None or position is None:
            return None
        holder = self._previous_spec if link.offset_syncs == "source" else self.spec
        if holder is None:
            return None  # on the cluster left, which did not answer
        syncs = self._read("syncs", policy.offset_syncs_topic(self.spec.name), OffsetSync.decode, on=holder)
        found: Proposal | None = from_syncs(syncs, logical, partition, position)
        return found

    def _reverse(self, topic: str, partition: int) -> Proposal | None:
        """``topic`` is original on the new cluster; the group read it on ``previous`` as a copy."""
        old = self.previous.cluster
        policy = self._policy(self.spec.name, old)
        if policy is None:
            return None
        copy = policy.format_remote_topic(self.spec.name, topic)
        position = self.previous.positions.get((copy, partition))
        if position is None:
            return None
        syncs = self._read("syncs", policy.offset_syncs_topic(old), OffsetSync.decode)
        found: Proposal | None = reverse(syncs, topic, partition, position)
        return found

    def _timestamp(self, stream: Slot, topic: str, partition: int) -> Proposal | None:
        ts = self.previous.timestamps.get(stream)
        if ts is None:
            return None
        try:
            (tp,) = self._consumer.offsets_for_times(
                [TopicPartition(topic, partition, max(ts - self._skew_ms, 0))], timeout=_LOOKUP_TIMEOUT_S
            )
        except KafkaException:
            return None
        if tp.offset < 0:
            return None  # nothing that recent: the end, which the ledger cannot vouch for
        return Proposal(tp.offset, "timestamp", f"{ts} - {self._skew_ms} ms")

    def _beginning(self, topic: str, partition: int) -> Proposal | None:
        try:
            low, _ = self._consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=_LOOKUP_TIMEOUT_S)
        except KafkaException:
            return None
        return Proposal(low, "beginning")

    # -- choice ----------------------------------------------------------------------------

    def choose(self, topic: str, partition: int, logical: str) -> Proposal | None:
        """The start position for ``topic``/``partition`` (None: leave it to the broker)."""
        strategies = [Strategy("committed", lambda: self._committed(topic, partition))]
        old = self.previous.cluster
        source_policy = self._policy(old, self.spec.name)
        if topic == logical:
            strategies.append(Strategy("mm2-reverse-sync", lambda: self._reverse(topic, partition)))
            stream = self._policy(self.spec.name, old)
            if stream is not None:  # the same records on the old cluster are the copy there
                copy = stream.format_remote_topic(self.spec.name, topic)
                strategies.append(
                    Strategy("timestamp", lambda: self._timestamp((copy, partition), topic, partition), exact=False)
                )
        elif source_policy is not None and source_policy.topic_source(topic) == old:
            strategies.append(Strategy("mm2-checkpoint", lambda: self._checkpoint(old, topic, partition)))
            strategies.append(Strategy("mm2-offset-sync", lambda: self._forward(old, topic, partition, logical)))
            strategies.append(
                Strategy("timestamp", lambda: self._timestamp((logical, partition), topic, partition), exact=False)
            )
        strategies.append(Strategy("beginning", lambda: self._beginning(topic, partition), exact=False))
        try:
            return choose(strategies)
        except LookupError:
            return None
