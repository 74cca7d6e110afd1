"""``hotstandby.adapters.kafka.Consumer``: confluent_kafka.Consumer that follows a route and
never hands a record over twice.

* ``subscribe(["orders"])`` reads, on the active cluster, ``orders`` and every remote copy of it
  there (``kafka-b.orders`` on kafka-a under MM2's default policy), so records produced on any
  cluster of the route are consumed. Messages report the logical topic (``orders``).
* Each record's ``hs-id`` is checked against the group's ack ledger: a record acknowledged
  before — on any cluster, before a restart or a switch — is skipped (and counted).
* Acknowledging is committing: ``commit`` first adds the committed records' identities to the
  ledger and stores it in the config center, then commits on the broker. With
  ``enable.auto.commit`` (the default), records returned by ``poll`` count as processed at the
  next ``poll`` and are committed every ``auto.commit.interval.ms``, as with confluent_kafka.
  Once the ledger is stored the records count as acknowledged, so ``commit(asynchronous=False)``
  returns when the ledger is stored; the broker's offsets are always committed asynchronously
  (a failure — an old cluster gone, a group being rebalanced — is logged, never raised, and a
  synchronous broker commit would wait without a limit for a dead coordinator). While etcd is
  unreachable acknowledgements are kept (they filter locally) and stored when it answers
  (adapters/kafka/ledgers.py); a synchronous commit that cannot store them within
  ``Settings.etcd_timeout`` raises ``KafkaException`` (``_TIMED_OUT``), as confluent_kafka's
  does when the broker does not answer; nothing else raises for it.
* ``commit`` acknowledges what confluent_kafka would commit: the stored offsets, a message's
  partition up to that message — also when it was handed out before a rebalance — or the given
  offsets. Without auto commit the consumer
  acknowledges nothing on its own, not at a rebalance and not at a switch. A message the
  application got from a cluster the consumer has since left is acknowledged by identity (it
  and the records of its partition handed out before it), never by offset: its offset names
  another record on the new cluster.
* A partition's ledger is claimed when the partition is assigned: a higher generation fences
  the previous owner's writes.
* On a switch the consumer stores its ledgers, leaves the old cluster and subscribes on the new
  one, resuming from the group's committed offsets there or else from the beginning — never
  after an unprocessed record; whatever is read again is filtered.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka.group_leave import PendingLeaves, leave_in_turn
from hotstandby.adapters.kafka.ledgers import Ledgers
from hotstandby.adapters.kafka.start_positions import StartPositions, Visit
from hotstandby.adapters.kafka.topic_map import physical_topics
from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.configcenter.lock import StoreLock
from hotstandby.errors import ConfigCenterError, ConfigCenterUnavailable, FormatError
from hotstandby.failover.ack_tracker import AckTracker
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower, wait_slices
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.follower import LedgerFollower
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switching import SwitchState
from hotstandby.logs import Seldom, get_logger

__all__ = ["Consumer"]

log = get_logger("hotstandby.kafka.consumer")

# Leaving a group in turn takes a few seconds per member on the reference broker.
_LEAVE_TIMEOUT_S = 25.0
# A group join takes seconds (23 s on the reference broker with librdkafka's defaults).
_JOIN_WARNING_S = 60.0
# Records fetched from librdkafka per call: one call per record costs more than our filter.
_FETCH_BATCH = 500

Rebalance = Callable[[Any, list[TopicPartition]], None]
Slot = tuple[str, int]  # (physical topic, partition)


class _Message(Message):
    """A message under its logical topic name, remembering the physical topic it came from."""

    physical_topic: str


def _now_ms() -> int:
    return int(time.time() * 1000)


def _record_id(
    headers: list[tuple[str, Any]] | dict[str, Any], topic: str, partition: int, offset: int
) -> RecordId | None:
    """The record's ``hs-id``; None when it has none (not written by our producer) or a bad one."""
    raw = dict(headers).get(HEADER)
    if raw is None:
        return None
    try:
        return RecordId.decode(raw if isinstance(raw, bytes) else raw.encode())
    except FormatError as exc:
        log.warning("record.bad_identity", topic=topic, partition=partition, offset=offset, error=str(exc))
        return None


class Consumer(RouteClient):
    """Drop-in replacement for :class:`confluent_kafka.Consumer` (see the module doc)."""

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.options, raw = ClientOptions.split(config, role="consumer")
        if "group.id" not in raw:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "group.id must be set"))
        self.group = str(raw["group.id"])
        self._auto_commit = str(raw.get("enable.auto.commit", True)).lower() in ("true", "1")
        self._auto_store = str(raw.get("enable.auto.offset.store", True)).lower() in ("true", "1")
        self._auto_interval_s = int(raw.get("auto.commit.interval.ms", 5000)) / 1000
        # We commit ourselves, so the ledger is always stored before the broker's offsets.
        self._raw_config = {**raw, "enable.auto.commit": False, "enable.auto.offset.store": False}
        self._raw_kwargs = kwargs
        self._follower = RouteFollower(self.options, "kafka", role="consumer", labels={"group": self.group})
        self._ledgers_store = LedgerStore(self._follower.center)
        # Entered on every poll: the RLock itself (C), the Condition only to wait for a switch.
        self._lock = threading.RLock()
        self._switched = threading.Condition(self._lock)
        self._topics: list[str] = []
        self._unassigned_since: float | None = None  # subscribed, no partitions assigned yet
        self._on_assign: Rebalance | None = None
        self._on_revoke: Rebalance | None = None
        self._logical: dict[str, str] = {}  # physical topic -> logical topic
        self._acks = AckTracker()  # ledgers, records handed out, acknowledgements
        self._seldom = Seldom(log)  # events that can happen per record
        self._ledgers = Ledgers(self._ledgers_store, self._acks, group=self.group, owner=self.options.client_id)
        self._starts: StartPositions | None = None  # after a switch: where each partition starts
        self._started: set[Slot] = set()
        # Per physical partition: the offset after the records stored as processed (returned
        # with enable.auto.offset.store, or store_offsets), after those acknowledged (committed),
        # and the last one handed out.
        self._stored: dict[Slot, int] = {}
        self._acked: dict[Slot, int] = {}
        self._handed: dict[Slot, int] = {}
        self._revoked_now: set[Slot] = set()  # revoked during the last fetch call (see _next)
        # Fetched from the current cluster, not yet examined (see _next).
        self._buffer: deque[Message] = deque()
        self._last_returned: tuple[Slot, int] | None = None  # (slot, offset) returned by poll
        self._last_auto_commit = time.monotonic()
        self._switching = False  # between the ledger flush and the new cluster: hand out nothing
        self._closing = False
        self._leaving: list[threading.Thread] = []  # old clusters' consumers leaving their group
        self.switches = 0
        # A consumer that starts while other members of its group are still on an older epoch
        # (draining the old cluster) hands nothing out until they have stored their ledgers.
        self._holding_since: float | None = time.monotonic()
        self._last_peer_check = 0.0
        self._inner = self._follow(self._connect, self._perform)
        self._ledger_follower = LedgerFollower(self._follower.center, self.group, self._merge_stored,
                                               name=f"ledgers-{self.options.client_id}")  # fmt: skip
        self._ledger_follower.start()

    # -- connections and topics -----------------------------------------------------------

    def _connect(self, spec: ClusterSpec) -> RawConsumer:
        config = {"auto.offset.reset": "earliest", **spec.client_config("consumer"), **self._raw_config}
        return RawConsumer({**config, "bootstrap.servers": spec.url}, **self._raw_kwargs)

    def _physical_topics(self, cluster: str, links: dict[tuple[str, str], Link]) -> dict[str, str]:
        """physical topic on ``cluster`` -> logical topic: each topic and its remote copies there."""
        prefixes = []
        for other in self._follower.route.clusters:
            link: Link | None = links.get((other, cluster))
            if other != cluster and link is not None and link.policy == "prefix":
                prefixes.append(f"{other}{link.separator}")
        mapping: dict[str, str] = physical_topics(self._topics, prefixes)
        return mapping

    def subscribe(
        self, topics: Sequence[str], on_assign: Rebalance | None = None, on_revoke: Rebalance | None = None
    ) -> None:
        # As creating the consumer: waits out a short etcd outage (hotstandby.etcd.timeout.ms).
        links = self._follower.patiently(self._follower.center.links, "reading the links")
        self._await_leaves(self._spec)
        with self._lock:
            self._topics = list(topics)
            self._on_assign, self._on_revoke = on_assign, on_revoke
            self._subscribe_inner(links)

    def _subscribe_inner(self, links: dict[tuple[str, str], Link]) -> None:
        self._logical = self._physical_topics(self._spec.name, links)
        self._unassigned_since = time.monotonic()
        self._inner.subscribe(sorted(self._logical), on_assign=self._assigned, on_revoke=self._revoked)

    def _logical_partitions(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        seen = {(self._logical.get(tp.topic, tp.topic), tp.partition) for tp in partitions}
        return [TopicPartition(t, p) for t, p in sorted(seen)]

    def _assigned(self, inner: Any, partitions: list[TopicPartition]) -> None:
        if inner is not self._inner or self._closing:
            return  # the consumer of a cluster we left, or we are closing
        self._unassigned_since = None
        if self._starts is not None:
            self._place(partitions)
        if self._starts is not None or self._holding_since is not None:
            inner.assign(partitions)
        if self._holding_since is not None:
            inner.pause(partitions)
        self._ledgers.claim({(self._logical.get(tp.topic, tp.topic), tp.partition) for tp in partitions})
        if self._ledgers.unclaimed:
            # Nothing of a partition is handed out before its ledger is claimed (etcd is
            # unreachable): the previous owner's acknowledgements may be missing from ours.
            if self._starts is None and self._holding_since is None:
                inner.assign(partitions)
            inner.pause(self._unclaimed(partitions))
        if self._on_assign:
            self._on_assign(self, self._logical_partitions(partitions))

    def _unclaimed(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        unclaimed = self._ledgers.unclaimed
        return [tp for tp in partitions if (self._logical.get(tp.topic, tp.topic), tp.partition) in unclaimed]

    def _retry_claims(self) -> None:
        """Claim the ledgers etcd did not let us claim at the assignment; resume their partitions."""
        if self._ledgers.retry_claims() and self._holding_since is None:
            assignment = self._inner.assignment()
            unclaimed = {(tp.topic, tp.partition) for tp in self._unclaimed(assignment)}
            self._inner.resume([tp for tp in assignment if (tp.topic, tp.partition) not in unclaimed])

    def _check_peers(self) -> None:
        """While holding: release once no other member is behind (or the drain timeout passed),
        after merging the stored ledgers of our partitions."""
        assert self._holding_since is not None
        now = time.monotonic()
        if now - self._last_peer_check < 0.1:
            return
        self._last_peer_check = now
        try:
            behind = self._follower.await_peers(self._follower.route, 0, group=self.group)
            loaded = {key: self._ledgers_store.load(self.group, *key).ledger for key in sorted(self._ledgers.owned)}
        except ConfigCenterError as exc:  # etcd unreachable: keep holding, ask again later
            log.info("consumer.peers_unknown", group=self.group, error=str(exc))
            self._last_peer_check = now + 0.9
            return
        # A peer drains for at most the drain timeout, then stores its ledgers at once.
        timed_out = now - self._holding_since > 2 * self.options.drain_timeout_ms / 1000
        if behind and not timed_out:
            return
        if behind:
            log.warning("consumer.peers_behind", group=self.group, clients=behind, epoch=self._follower.route.epoch)
        for key, ledger in loaded.items():
            self._acks.merge(key, ledger)
        self._holding_since = None
        assignment = self._inner.assignment()
        unclaimed = {(tp.topic, tp.partition) for tp in self._unclaimed(assignment)}
        self._inner.resume([tp for tp in assignment if (tp.topic, tp.partition) not in unclaimed])

    def _merge_stored(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        """Acknowledgements stored by any member (ourselves included) join our filter."""
        with self._lock:
            self._acks.merge((topic, partition), ledger)

    def _place(self, partitions: list[TopicPartition]) -> None:
        """Set the start offset of partitions assigned for the first time since the switch."""
        assert self._starts is not None
        for tp in partitions:
            slot = (tp.topic, tp.partition)
            if slot in self._started:
                continue
            self._started.add(slot)
            proposal = self._starts.choose(tp.topic, tp.partition, self._logical.get(tp.topic, tp.topic))
            if proposal is not None:
                tp.offset = proposal.position
                log.info("consumer.start_position", cluster=self._spec.name, topic=tp.topic, partition=tp.partition,
                         offset=proposal.position, strategy=proposal.strategy, detail=proposal.detail)  # fmt: skip

    def _revoked(self, inner: Any, partitions: list[TopicPartition]) -> None:
        if inner is not self._inner or self._closing:
            return  # a cluster we left, or we are closing: the acknowledgements are stored already
        if self._on_revoke:
            # First, so that what the application commits there is kept too.
            self._on_revoke(self, self._logical_partitions(partitions))
        if self._auto_commit:  # what was processed on these partitions is kept
            self._commit(dict(self._stored), asynchronous=True)
        gone = {(tp.topic, tp.partition) for tp in partitions}
        # What was handed out there stays aside: a later commit(message=...) still covers it.
        self._acks.forget(gone)
        for slot in gone:
            for offsets in (self._stored, self._handed):
                offsets.pop(slot, None)
        # Fetched, never handed out: the partition's next owner reads them from the committed
        # offset (and so do we, if it is assigned to us again).
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) not in gone)
        self._revoked_now |= gone
        # A logical partition stays owned while another of its physical topics is still assigned.
        still = {(self._logical.get(t, t), p) for t, p in
                 {(tp.topic, tp.partition) for tp in self._inner.assignment()} - gone}  # fmt: skip
        self._ledgers.release({(self._logical.get(t, t), p) for t, p in gone} - still)

    # -- consuming ------------------------------------------------------------------------

    def poll(self, timeout: float | None = -1) -> Message | None:
        """The next record not acknowledged before (or an error event), as confluent_kafka does."""
        with self._lock:
            self._mark_returned_processed()
            self._maybe_auto_commit()
            if self._ledgers.dirty:  # acknowledgements etcd did not take yet
                self._ledgers.store(set())
            # Fast path: records fetched already, none of the waits below needed.
            while self._buffer and not self._switching and self._holding_since is None:
                out = self._accept(self._buffer.popleft())
                if out is not None:
                    return out
        for wait in wait_slices(timeout):
            with self._lock:
                if self._switching:
                    self._switched.wait(wait)
                    continue
                if self._holding_since is not None:
                    self._check_peers()
                if self._ledgers.unclaimed:
                    self._retry_claims()
                msg = self._next(wait)
                if msg is None:
                    self._check_joined()
                    continue
                out = self._accept(msg)
                if out is not None:
                    return out
        return None

    def _check_joined(self) -> None:
        """Say so, once per subscription, when the group gave us no partitions for long: a
        group that cannot form (a broker fault) would otherwise look like an idle topic."""
        since = self._unassigned_since
        if since is not None and time.monotonic() - since > _JOIN_WARNING_S:
            self._unassigned_since = None
            log.warning("consumer.no_assignment", cluster=self._spec.name, group=self.group,
                        waited_s=_JOIN_WARNING_S, topics=sorted(self._logical))  # fmt: skip

    def _next(self, wait: float) -> Message | None:
        """The next fetched record: from the buffer, else a batch of what librdkafka holds, else
        one record waited for up to ``wait``."""
        if not self._buffer:
            self._revoked_now.clear()
            batch = self._inner.consume(_FETCH_BATCH, 0)
            if not batch:
                msg = self._inner.poll(wait)
                return None if msg is not None and self._revoked_now and self._not_ours([msg]) else msg
            if self._revoked_now:
                batch = self._not_ours(batch, keep=True)
            self._buffer.extend(batch)
        return self._buffer.popleft() if self._buffer else None

    def _not_ours(self, batch: list[Message], *, keep: bool = False) -> list[Message]:
        """Records of partitions revoked during the call that fetched them and not assigned to
        us again: librdkafka fetched them before the revocation; the new owner reads them from
        the committed offset. With ``keep``, the other records instead. (A partition assigned
        again keeps its records: they follow what we examined, as the buffer was empty, and
        reading restarts at the committed offset; AckTracker sets the earlier reads aside.)"""
        assigned = {(tp.topic, tp.partition) for tp in self._inner.assignment()}
        gone = self._revoked_now - assigned
        return [m for m in batch if (m.error() is None and (m.topic(), m.partition()) in gone) != keep]

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        out: list[Message] = []
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while len(out) < num_messages:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            msg = self.poll(left if out == [] else 0.0)
            if msg is None:
                break
            out.append(msg)
        return out

    def _accept(self, msg: Message) -> Message | None:
        """Filter a record already acknowledged; otherwise hand it out under its logical topic."""
        if msg.error() is not None:
            return msg
        physical, partition, offset = msg.topic() or "", msg.partition() or 0, msg.offset() or 0
        logical = self._logical.get(physical, physical)
        headers = msg.headers()
        rid = _record_id(headers, physical, partition, offset) if headers else None
        slot = (physical, partition)
        if not self._acks.offer(logical, slot, offset, rid, msg.timestamp()[1]):
            # Processed as it is filtered, but a commit covering it covers what was handed out
            # before: only once that is stored too.
            stored = self._stored.get(slot, 0)
            if stored > self._handed.get(slot, -1) and stored <= offset:
                self._stored[slot] = offset + 1
            return None
        self._last_returned = (slot, offset)
        self._handed[slot] = offset
        if physical == logical:
            return msg
        out = _Message(
            topic=logical, partition=partition, offset=offset, key=msg.key(), value=msg.value(),
            headers=headers, timestamp=msg.timestamp(),
        )  # fmt: skip
        out.physical_topic = physical
        return out

    # -- acknowledging --------------------------------------------------------------------

    def _mark_returned_processed(self) -> None:
        if self._auto_store and self._last_returned is not None:
            slot, offset = self._last_returned
            if self._stored.get(slot, 0) <= offset:
                self._stored[slot] = offset + 1
        self._last_returned = None

    def _maybe_auto_commit(self) -> None:
        if self._auto_commit and time.monotonic() >= self._last_auto_commit + self._auto_interval_s:
            self._commit(dict(self._stored), asynchronous=True)

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Mark records processed (for ``enable.auto.offset.store=false``)."""
        with self._lock:
            for slot, next_offset in self._slots(message, offsets).items():
                self._stored[slot] = max(self._stored.get(slot, 0), next_offset)

    def _slots(self, message: Message | None, offsets: list[TopicPartition] | None) -> dict[Slot, int]:
        if message is not None:
            physical = str(getattr(message, "physical_topic", None) or message.topic())
            slot, offset = (physical, message.partition() or 0), message.offset() or 0
            headers = message.headers()
            rid = _record_id(headers, physical, slot[1], offset) if headers else None
            timestamp = message.timestamp()[1]
            if self._acks.handed_out(slot, offset, rid, timestamp):
                # Handed out on this cluster, before or after a rebalance: the commit covers it
                # and the earlier records of its partition, as confluent_kafka's does.
                return {slot: offset + 1}
            # Handed out on a cluster this consumer has left: its offset names another record
            # here, so it (and what it covers there) is acknowledged by identity only.
            left = self._acks.acknowledge_left_behind(slot, offset, rid, timestamp, _now_ms())
            if left is not None:
                log.info("consumer.acknowledged_after_switch", topic=physical, partition=slot[1], offset=offset,
                         cluster=self._spec.name)  # fmt: skip
            elif rid is not None:  # acknowledged already (or from a cluster left before the last)
                key = self._acks.acknowledge_identity(str(message.topic()), rid, _now_ms())
                left = {key} if key is not None else set()
            else:
                self._seldom.info("consumer.ack_without_identity_ignored", topic=physical, partition=slot[1],
                                  offset=offset, cluster=self._spec.name)  # fmt: skip
            self._ledgers.dirty |= left or set()
            return {}
        if offsets is not None:
            # Offsets name physical partitions: the logical topic's own ("orders") or a remote
            # copy ("kafka-b.orders"); commit(message=...) picks the right one by itself.
            return {(tp.topic, tp.partition): tp.offset for tp in offsets}
        return self._acks.next_positions()

    def commit(
        self, message: Message | None = None, offsets: list[TopicPartition] | None = None, asynchronous: bool = True
    ) -> list[TopicPartition] | None:
        """Acknowledge, as confluent_kafka commits: the stored offsets, or the given message's
        partition up to it, or the given offsets. Ledger first (in the config center), then the
        broker's offsets."""
        with self._lock:
            if message is None and offsets is None:
                self._mark_returned_processed()
                return self._commit(dict(self._stored), asynchronous=asynchronous)
            return self._commit(self._slots(message, offsets), asynchronous=asynchronous)

    def _acknowledge(self, positions: dict[Slot, int]) -> None:
        for slot, next_offset in positions.items():
            self._acks.acknowledge_through(slot, next_offset)
            if self._acked.get(slot, -1) < next_offset:
                self._acked[slot] = next_offset

    def _commit(self, positions: dict[Slot, int], *, asynchronous: bool = False) -> list[TopicPartition] | None:
        """Acknowledge, store the ledgers, then commit on the broker. A synchronous commit whose
        ledgers etcd did not take within its timeout fails as confluent_kafka's does when the
        broker does not answer (``_TIMED_OUT``); the acknowledgements are kept and stored later.
        An asynchronous one (auto commit too) never raises: what is not stored is retried."""
        self._last_auto_commit = time.monotonic()
        self._acknowledge(positions)
        keys = self._acks.collect(_now_ms())
        deadline = None if asynchronous else time.monotonic() + self.options.settings.etcd_timeout
        if not self._ledgers.store(keys, deadline=deadline) and deadline is not None:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                            f"commit: the ledger could not be stored in the config center within "
                                            f"{self.options.settings.etcd_timeout} s; it is kept and stored later"))  # fmt: skip
        if not positions:
            return None
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())]
        try:
            # Always asynchronous on the broker: a synchronous commit waits without a limit for
            # a coordinator, and a dead cluster would hold the client (and its switch) forever.
            # The ledger already holds the acknowledgement; the broker's offsets only save
            # re-reading, and the next commit stores them.
            self._inner.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            log.warning("consumer.broker_commit_failed", cluster=self._spec.name, error=str(exc))
        return None if asynchronous else offsets

    # -- the rest of the confluent_kafka surface ------------------------------------------

    @property
    def filtered(self) -> int:
        """Records not handed out because they were acknowledged (or in flight) already."""
        return self._acks.filtered

    def assignment(self) -> list[TopicPartition]:
        with self._lock:
            return self._logical_partitions(self._inner.assignment())

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """Committed offsets of the physical partitions behind the given logical ones."""
        with self._lock:
            physical = [
                TopicPartition(p, tp.partition)
                for tp in partitions
                for p, lg in self._logical.items()
                if lg == tp.topic
            ]
            return list(self._inner.committed(physical, timeout=30.0 if timeout is None else timeout))

    def close(self) -> None:
        """Commit what was processed (with auto commit), store the ledgers, leave the group."""
        with self._lock:
            if self._auto_commit:
                self._mark_returned_processed()
                self._commit(dict(self._stored), asynchronous=True)
            deadline = time.monotonic() + self.options.settings.etcd_timeout
            if not self._ledgers.store(set(self._ledgers.owned), deadline=deadline):
                log.warning("consumer.ledgers_unstored", group=self.group, ledgers=len(self._ledgers.dirty))
            inner = self._inner
            self._closing = True
        self._leave(inner, self._spec, self._mark_leaving(self._spec))
        for thread in self._leaving:
            thread.join(_LEAVE_TIMEOUT_S)
        self._ledger_follower.close()
        self._follower.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- switching ------------------------------------------------------------------------

    def _perform(self, current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
        # Everything read from the config center is read first: a failure past the point where
        # the consumer gives up the old cluster would leave it half switched.
        spec = self._follower.cluster(target.active)
        links = self._follower.center.links()
        old_spec = self._spec
        self._drain(current, set_state)
        with self._lock:
            self._switching = True  # what is handed out from now on would not be in the ledger
            try:
                self._settle()
            except BaseException:
                self._resume_old()
                raise
        set_state(SwitchState.SWITCHING)  # published: this member's acknowledgements are stored
        try:
            # Other members of the group store theirs before we read the ledgers on the new cluster.
            behind = self._follower.await_peers(target, self.options.drain_timeout_ms / 1000, group=self.group)
            if behind:
                log.warning("consumer.peers_behind", group=self.group, clients=behind, epoch=target.epoch)
            new = self._connect(spec)
            try:
                new.list_topics(timeout=10)  # raises if the new cluster does not answer
            except BaseException:
                new.close()
                raise
        except BaseException:
            self._resume_old()
            raise
        self._await_leaves(spec)
        with self._lock:
            old = self._inner
            visit = Visit(current.active, dict(self._acked), dict(self._acks.last_acked_ts))
            self._starts = StartPositions(
                group=self.group, spec=spec, previous=visit,
                links=links, skew_ms=self.options.timestamp_skew_ms, consumer=new,
            )  # fmt: skip
            self._started.clear()
            self._inner, self._spec = new, spec
            self._ledgers.reset()  # claimed again as the new cluster assigns partitions
            self._acks.reset()
            self._buffer.clear()  # fetched from the old cluster, never handed out
            for offsets in (self._stored, self._acked, self._handed):
                offsets.clear()
            if self._topics:
                self._subscribe_inner(links)
            self.switches += 1
            self._switching = False
            self._switched.notify_all()
        leaving = threading.Thread(
            target=self._leave, args=(old, old_spec, self._mark_leaving(old_spec)), daemon=True,
            name=f"hotstandby-leave-{current.active}",
        )  # fmt: skip
        leaving.start()
        self._leaving.append(leaving)
        log.info("consumer.switched", client=self.options.client_id, source=current.active, to=target.active,
                 epoch=target.epoch)  # fmt: skip

    def _resume_old(self) -> None:
        with self._lock:
            self._switching = False
            self._switched.notify_all()

    def _settle(self) -> None:
        """Store every acknowledgement (ledger first), then commit on the old cluster if it
        answers. With auto commit, what was returned counts as processed; without, what the
        application did not commit stays unacknowledged (see AckTracker.reset)."""
        if self._auto_commit:
            self._mark_returned_processed()
            self._acknowledge(dict(self._stored))
        keys = self._acks.collect(_now_ms()) | self._ledgers.owned
        if not self._ledgers.store(keys, deadline=time.monotonic() + self.options.settings.etcd_timeout):
            raise ConfigCenterUnavailable("the ledgers could not be stored before the switch; it is retried")
        if self._acked:
            offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self._acked.items())]
            try:
                self._inner.commit(offsets=offsets, asynchronous=True)
            except KafkaException as exc:  # the ledger holds them; the old cluster may be gone
                log.warning("consumer.commit_failed", cluster=self._spec.name, error=str(exc))

    def _pending_leaves(self, spec: ClusterSpec) -> PendingLeaves:
        return PendingLeaves(self._follower.center, spec.name, self.group, ttl_s=int(_LEAVE_TIMEOUT_S) + 5)

    def _mark_leaving(self, spec: ClusterSpec) -> int | None:
        """Tell members about to join ``spec``'s group that we are leaving it (group_leave)."""
        try:
            lease: int = self._pending_leaves(spec).mark(self.options.client_id)
            return lease
        except ConfigCenterError as exc:
            log.warning("consumer.leave_mark_failed", cluster=spec.name, group=self.group, error=str(exc))
            return None

    def _await_leaves(self, spec: ClusterSpec) -> None:
        """Join ``spec``'s group only once no member is leaving it (joins racing leaves can
        wedge a group on the reference broker: group_leave)."""
        started = time.monotonic()
        try:
            left: list[str] = self._pending_leaves(spec).wait_none(_LEAVE_TIMEOUT_S)
        except ConfigCenterError as exc:
            log.warning("consumer.leaves_unknown", cluster=spec.name, group=self.group, error=str(exc))
            return
        waited_ms = round((time.monotonic() - started) * 1000)
        if left:
            log.warning("consumer.joining_while_leaving", cluster=spec.name, group=self.group, members=left,
                        waited_ms=waited_ms)  # fmt: skip
        elif waited_ms >= 100:
            log.info("consumer.waited_for_leaves", cluster=spec.name, group=self.group, waited_ms=waited_ms)

    def _leave(self, raw: RawConsumer, spec: ClusterSpec, marked: int | None) -> None:
        """Leave ``spec``'s group in turn with the other members (see group_leave)."""
        center = self._follower.center
        lock = StoreLock(center.store, center.keys.lock(f"leave/{spec.name}/{self.group}"),
                         owner=self.options.client_id, ttl_s=30)  # fmt: skip
        leaves = self._pending_leaves(spec)

        def harmless() -> None:
            if marked is not None:
                leaves.unmark(marked)

        try:
            leave_in_turn(raw, spec=spec, group=self.group, lock=lock, timeout=_LEAVE_TIMEOUT_S, harmless=harmless)
        finally:
            harmless()

    def _drain(self, current: Route, set_state: Callable[[SwitchState], None]) -> None:
        """Planned switch: let the application read the old cluster up to its end offsets at the
        flip (bounded by the drain timeout). Skipped when the old cluster does not answer."""
        timeout = self.options.drain_timeout_ms / 1000
        with self._lock:
            assignment = self._inner.assignment() if timeout > 0 else []
            try:
                ends = {
                    (tp.topic, tp.partition): self._inner.get_watermark_offsets(tp, timeout=min(timeout, 2.0))[1]
                    for tp in assignment
                }
            except KafkaException as exc:
                log.info("consumer.drain_skipped", cluster=current.active, error=str(exc))
                return
            start = self._start_positions(assignment)
        if not ends:
            return
        set_state(SwitchState.DRAINING)
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                positions = self._positions(assignment)
                left = {
                    slot: end for slot, end in ends.items()
                    if max(positions.get(slot, -1), start.get(slot, -1)) < end
                }  # fmt: skip
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if left:
            log.warning("consumer.drain_incomplete", cluster=current.active, partitions=len(left),
                        timeout_ms=self.options.drain_timeout_ms)  # fmt: skip
        else:
            log.info("consumer.drained", cluster=current.active, partitions=len(ends))

    def _positions(self, assignment: list[TopicPartition]) -> dict[Slot, int]:
        """The next offset the application gets per partition: librdkafka's position, or the first
        record still in our buffer."""
        out = {(tp.topic, tp.partition): tp.offset for tp in self._inner.position(assignment)}
        for msg in reversed(self._buffer):
            if msg.error() is None:
                out[(msg.topic() or "", msg.partition() or 0)] = msg.offset() or 0
        return out

    def _start_positions(self, assignment: list[TopicPartition]) -> dict[Slot, int]:
        """Where reading starts for partitions nothing was read from yet: committed or low mark."""
        try:
            committed = self._inner.committed(assignment, timeout=2.0)
        except KafkaException:
            return {}
        out = {}
        for tp in committed:
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
            else:
                out[(tp.topic, tp.partition)] = self._inner.get_watermark_offsets(tp, timeout=2.0)[0]
        return out
