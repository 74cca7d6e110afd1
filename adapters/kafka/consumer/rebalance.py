"""Rebalances of a Kafka ``Consumer``: what it subscribes to, what the group assigns it, and
what it may read of that.

* ``subscribe(["orders"])`` subscribes, on the cluster in use, to ``orders`` and every remote
  copy of it there (``kafka-b.orders`` on kafka-a under MM2's default policy).
* A partition's ledger is claimed when the partition is assigned (a higher generation fences
  the previous owner's writes); until the claim succeeds (etcd unreachable) nothing of that
  partition is handed out.
* After a switch each partition assigned for the first time starts at its translated position
  (``start_positions``).
* A consumer that starts while other members of its group are still on an older epoch
  (draining the old cluster) *holds*: it hands nothing out until they have stored their ledgers
  (or twice the drain timeout passed), then merges them.
* A revoked partition's processed records are committed (auto commit); what was handed out
  there stays aside for a later ``commit(message=...)``.
* A partition the application paused stays paused until it resumes it: whenever it is
  assigned — after a rebalance or on the cluster a switch moved to — it is paused again there.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaException, TopicPartition

from hotstandby.adapters.kafka.consumer.commit import Committer
from hotstandby.adapters.kafka.consumer.fetch import Fetcher
from hotstandby.adapters.kafka.consumer.named_partitions import PhysicalAssignment
from hotstandby.adapters.kafka.consumer.start_positions import StartPositions
from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot, log
from hotstandby.adapters.kafka.consumer.topic_map import copy_prefixes, physical_topics
from hotstandby.configcenter.documents import Link
from hotstandby.errors import ConfigCenterError

__all__ = ["Assignments", "Rebalance"]

# A group join takes seconds (23 s on the reference broker with librdkafka's defaults).
_JOIN_WARNING_S = 60.0
_LEARN_TIMEOUT_S = 2.0  # a copy's metadata, asked of a cluster that just answered about it

Rebalance = Callable[[Any, list[TopicPartition]], None]


class Assignments:
    """Subscription, assignment and holding of one consumer (see the module doc)."""

    def __init__(self, state: ConsumerState, fetcher: Fetcher, committer: Committer, facade: object) -> None:
        self._s = state
        self._fetcher = fetcher
        self._committer = committer
        self._facade = facade  # what the application's rebalance callbacks get as the consumer
        self._on_assign: Rebalance | None = None
        self._on_revoke: Rebalance | None = None
        self._on_lost: Rebalance | None = None
        self._unassigned_since: float | None = None  # subscribed, no partitions assigned yet
        self._starts: StartPositions | None = None  # after a switch: where each partition starts
        self._started: set[Slot] = set()
        self.holding_since: float | None = time.monotonic()
        self._in_callback = False  # in the application's on_assign
        self._requested: PhysicalAssignment | None = None  # what it assigned there
        self._last_peer_check = 0.0

    # -- subscribing ----------------------------------------------------------------------

    def subscribe(self, topics: list[str], on_assign: Rebalance | None, on_revoke: Rebalance | None,
                  on_lost: Rebalance | None, links: dict[tuple[str, str], Link]) -> None:  # fmt: skip
        self._s.topics = topics
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        self.resubscribe(links)

    def unsubscribe(self) -> None:
        """Nothing subscribed any more, here or on the clusters a switch moves to."""
        self._s.topics = []
        self._unassigned_since = None
        self._s.inner.unsubscribe()

    def resubscribe(self, links: dict[tuple[str, str], Link]) -> None:
        """Subscribe the raw consumer in use to the topics and their remote copies there."""
        s = self._s
        s.logical = physical_topics(s.topics, copy_prefixes(s.follower.route.clusters, s.spec.name, links))
        s.late_copies.forget()
        self._unassigned_since = time.monotonic()
        s.inner.subscribe(sorted(s.logical), on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)

    def restart(self, starts: StartPositions) -> None:
        """A switch: partitions assigned from now on start where ``starts`` says."""
        self._starts = starts
        self._started.clear()

    def revoke_all(self) -> None:
        """Closing: the application's ``on_revoke`` hears of every partition the group assigned
        it, as confluent-kafka's ``close`` tells it (a manual assignment is not revoked)."""
        s = self._s
        if self._on_revoke is None or not s.topics:
            return
        assigned = s.inner.assignment()
        if assigned:
            self._on_revoke(self._facade, self.logical_partitions(assigned))

    def logical_partitions(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The logical partitions behind physical ones, with the offset of the topic's own
        partition (a copy's offsets name other records)."""
        seen = {(self._s.logical_of(tp.topic), tp.partition) for tp in partitions}
        own = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        return [TopicPartition(t, p, own.get((t, p), OFFSET_INVALID)) for t, p in sorted(seen)]

    # -- the group's callbacks ------------------------------------------------------------

    def _assigned(self, inner: Any, partitions: list[TopicPartition]) -> None:
        s = self._s
        if inner is not s.inner or s.closing:
            return  # the consumer of a cluster we left, or we are closing
        self._unassigned_since = None
        if self._starts is not None:
            self.place(partitions)
        requested = self._tell_assigned(partitions)
        if requested is not None:  # the application assigned in on_assign: its partitions and offsets
            placed = {(tp.topic, tp.partition): tp.offset for tp in partitions}
            s.logical.update(requested.names)
            partitions = [
                TopicPartition(tp.topic, tp.partition, placed.get((tp.topic, tp.partition), tp.offset))
                if tp.offset == OFFSET_INVALID else tp
                for tp in requested.partitions()
            ]  # fmt: skip
        s.ledgers.claim({(s.logical_of(tp.topic), tp.partition) for tp in partitions})
        # A cooperative group hands over the partitions added only, to be added as such.
        self.apply(partitions, assign=self._starts is not None or requested is not None, incremental=s.incremental)

    def _tell_assigned(self, partitions: list[TopicPartition]) -> PhysicalAssignment | None:
        """The application's ``on_assign``; what it assigned itself there (None: nothing)."""
        if not self._on_assign:
            return None
        self._requested = None
        self._in_callback = True
        try:
            self._on_assign(self._facade, self.logical_partitions(partitions))
        finally:
            self._in_callback = False
        requested, self._requested = self._requested, None
        return requested

    def request(self, assignment: PhysicalAssignment) -> bool:
        """``assign`` called by the application: inside its ``on_assign``, the partitions to
        assign once the callback returns (True); outside (False), a manual assignment."""
        if not self._in_callback:
            return False
        if self._requested is None:
            self._requested = assignment
        else:
            self._requested.offsets.update(assignment.offsets)
            self._requested.names.update(assignment.names)
        return True

    def apply(self, partitions: list[TopicPartition], *, assign: bool, incremental: bool = False) -> None:
        """Assign ``partitions`` on the consumer in use (when ``assign`` or to pause them) and
        pause what may not be read yet: everything while holding, else what the application
        paused and what has no claimed ledger. Nothing of a partition is handed out before its
        ledger is claimed (etcd unreachable): the previous owner's acknowledgements may be
        missing from ours."""
        inner = self._s.inner
        paused = self.paused_of(partitions)
        unclaimed = self._unclaimed(partitions)
        if assign or self.holding_since is not None or paused or unclaimed:
            # librdkafka pauses assigned partitions only
            (inner.incremental_assign if incremental else inner.assign)(partitions)
        if self.holding_since is not None:
            inner.pause(partitions)
        elif paused or unclaimed:
            inner.pause(paused + unclaimed)

    def _lost(self, inner: Any, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the group went on without us): as revoked, telling the application's
        ``on_lost`` (else its ``on_revoke``), as confluent-kafka does."""
        self._revoked(inner, partitions, lost=True)

    def _revoked(self, inner: Any, partitions: list[TopicPartition], *, lost: bool = False) -> None:
        s = self._s
        if inner is not s.inner or s.closing:
            return  # a cluster we left, or we are closing: the acknowledgements are stored already
        tell = (self._on_lost or self._on_revoke) if lost else self._on_revoke
        if tell and lost:  # after the error event fetched with it, if any (Fetcher.next)
            s.lost_tells.append(functools.partial(tell, self._facade, self.logical_partitions(partitions)))
        elif tell:
            # First, so that what the application commits there is kept too.
            tell(self._facade, self.logical_partitions(partitions))
        if self._committer.auto_commit:  # what was processed on these partitions is kept
            self._committer.commit(s.acks.processed_positions(), asynchronous=True, inline=True)
        self.let_go({(tp.topic, tp.partition) for tp in partitions})

    def let_go(self, gone: set[Slot]) -> None:
        """The physical partitions ``gone`` are no longer ours (revoked, unassigned)."""
        s = self._s
        # What was handed out there stays aside: a later commit(message=...) still covers it.
        s.acks.forget(gone)
        self._committer.own.forget(gone)
        self._fetcher.drop(gone)
        # A logical partition stays owned while another of its physical topics is still assigned.
        still = {(s.logical_of(t), p) for t, p in {(tp.topic, tp.partition) for tp in s.inner.assignment()} - gone}
        s.ledgers.release({(s.logical_of(t), p) for t, p in gone} - still)

    def place(self, partitions: list[TopicPartition]) -> None:
        """Set the start offset of partitions assigned for the first time since the switch."""
        assert self._starts is not None
        for tp in partitions:
            slot = (tp.topic, tp.partition)
            if slot in self._started:
                continue
            self._started.add(slot)
            if tp.offset != OFFSET_INVALID:
                continue  # the application's own position
            proposal = self._starts.choose(tp.topic, tp.partition, self._s.logical_of(tp.topic))
            if proposal is not None:
                tp.offset = proposal.position
                log.info("consumer.start_position", cluster=self._s.spec.name, topic=tp.topic,
                         partition=tp.partition, offset=proposal.position, strategy=proposal.strategy,
                         detail=proposal.detail)  # fmt: skip

    # -- before reading -------------------------------------------------------------------

    def _unclaimed(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        unclaimed = self._s.ledgers.unclaimed
        return [tp for tp in partitions if (self._s.logical_of(tp.topic), tp.partition) in unclaimed]

    def paused_of(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The physical partitions of ``partitions`` the application paused (as logical ones)."""
        paused, logical_of = self._s.paused, self._s.logical_of
        return [tp for tp in partitions if (logical_of(tp.topic), tp.partition) in paused]

    def readable(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Of ``partitions``, those the SDK itself does not hold (ledger claimed, no peer behind)."""
        if self.holding_since is not None:
            return []
        unclaimed = {(tp.topic, tp.partition) for tp in self._unclaimed(partitions)}
        return [tp for tp in partitions if (tp.topic, tp.partition) not in unclaimed]

    def _resume_claimed(self) -> None:
        inner = self._s.inner
        assignment = inner.assignment()
        held = {(tp.topic, tp.partition) for tp in self._unclaimed(assignment) + self.paused_of(assignment)}
        inner.resume([tp for tp in assignment if (tp.topic, tp.partition) not in held])

    def before_fetch(self) -> None:
        """Release what may be read now: partitions once no peer is behind, ledgers claimed late."""
        if self.holding_since is not None:
            self._check_peers()
        if self._s.ledgers.unclaimed and self._s.ledgers.retry_claims() and self.holding_since is None:
            # Claimed the ledgers etcd did not let us claim at the assignment: resume them.
            self._resume_claimed()
        appeared = self._s.late_copies.appeared(self._s.spec) if self._s.topics else None
        if appeared:
            self._learn_copies(appeared)

    def _learn_copies(self, copies: set[str]) -> None:
        """Missing copies are there now. librdkafka's cache keeps a subscribed topic it found
        missing until its periodic refresh; a metadata request for every topic updates it, and
        the group then rejoins with the copies, as at that refresh. Not ``subscribe`` again:
        confluent-kafka holds the GIL while librdkafka's group thread takes the new
        subscription, which stalled an application's other threads (its event loop) for
        100-250 ms on a busy machine."""
        s = self._s
        log.info("consumer.copy_appeared", cluster=s.spec.name, topics=sorted(copies))
        try:
            s.inner.list_topics(timeout=_LEARN_TIMEOUT_S)
        except KafkaException as exc:  # asked again later
            log.info("consumer.copy_metadata_failed", cluster=s.spec.name, error=str(exc))
            s.late_copies.missing(copies)

    def _check_peers(self) -> None:
        """While holding: release once no other member is behind (or the drain timeout passed),
        after merging the stored ledgers of our partitions."""
        assert self.holding_since is not None
        s = self._s
        now = time.monotonic()
        if now - self._last_peer_check < 0.1:
            return
        self._last_peer_check = now
        try:
            behind = s.follower.await_peers(s.follower.route, 0, group=s.group)
            loaded = {key: s.ledger_store.load(s.group, *key).ledger for key in sorted(s.ledgers.owned)}
        except ConfigCenterError as exc:  # etcd unreachable: keep holding, ask again later
            log.info("consumer.peers_unknown", group=s.group, error=str(exc))
            self._last_peer_check = now + 0.9
            return
        # A peer drains for at most the drain timeout, then stores its ledgers at once.
        timed_out = now - self.holding_since > 2 * s.options.drain_timeout_ms / 1000
        if behind and not timed_out:
            return
        if behind:
            log.warning("consumer.peers_behind", group=s.group, clients=behind, epoch=s.follower.route.epoch)
        for key, ledger in loaded.items():
            s.acks.merge(key, ledger)
        self.holding_since = None
        self._resume_claimed()

    def check_joined(self) -> None:
        """Say so, once per subscription, when the group gave us no partitions for long: a
        group that cannot form (a broker fault) would otherwise look like an idle topic."""
        since = self._unassigned_since
        if since is not None and time.monotonic() - since > _JOIN_WARNING_S:
            self._unassigned_since = None
            log.warning("consumer.no_assignment", cluster=self._s.spec.name, group=self._s.group,
                        waited_s=_JOIN_WARNING_S, topics=sorted(self._s.logical))  # fmt: skip
