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
  (hotstandby/failover/ledger/ownership.py); a synchronous commit that cannot store them within
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
* Messages come without the SDK's ``hs-id`` header (their identity is
  ``msg.hs_id``); error events about a remote copy that does not exist yet are not handed out.

``hotstandby.on_switch`` (a callable in the configuration) is given each switch event
(docs/observability.md).

The class delegates: fetching and the filter (``fetch``), acknowledging and committing
(``consumer_commit``), subscription and rebalances (``consumer_rebalance``), its part in the
switch protocol (``switch``), the rest of confluent-kafka's surface
(``extras``); the state they share lives in ``state``. docs/kafka-api.md
says what each method does across a switch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka import arguments
from hotstandby.adapters.kafka.consumer.assign import ManualAssignment
from hotstandby.adapters.kafka.consumer.commit import Committer
from hotstandby.adapters.kafka.consumer.extras import ConsumerExtras
from hotstandby.adapters.kafka.consumer.fetch import Fetcher
from hotstandby.adapters.kafka.consumer.group_leave import GroupLeaves
from hotstandby.adapters.kafka.consumer.rebalance import Assignments, Rebalance
from hotstandby.adapters.kafka.consumer.state import ConsumerState, log
from hotstandby.adapters.kafka.consumer.switch import ConsumerSwitch
from hotstandby.adapters.kafka.surface import bool_setting, config_dict, int_setting
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower, wait_slices
from hotstandby.failover.ledger.follower import LedgerFollower
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switch_events import ClientCounts

__all__ = ["Consumer"]

# Leaving a group in turn takes a few seconds per member on the reference broker.
_LEAVE_TIMEOUT_S = 25.0


class Consumer(ConsumerExtras, RouteClient):
    """Drop-in replacement for :class:`confluent_kafka.Consumer` (see the module doc).

    ``center`` (the config center), ``ledger_store`` (where the ledgers are kept) and ``clock``
    (wall-clock seconds, for acknowledgement times) default to the config center the
    ``hotstandby.*`` settings name, a :class:`LedgerStore` in it and :func:`time.time`. A
    center passed in stays open when the consumer closes.

    Raises as confluent-kafka does: ``TypeError`` without a configuration dict, ``ValueError``
    without ``group.id``, ``KafkaException`` (``_INVALID_ARG``) for a bad setting; after
    :meth:`close`, every method but ``close`` raises ``RuntimeError``."""

    def __init__(
        self,
        config: dict[str, Any] | None = None,
        *,
        center: ConfigCenter | None = None,
        ledger_store: LedgerStore | None = None,
        clock: Callable[[], float] = time.time,
        **kwargs: Any,
    ) -> None:
        config = config_dict(config, kwargs)  # as confluent-kafka, keywords are properties too
        if not config.get("group.id"):
            raise ValueError("Failed to create consumer: group.id must be set")
        self._closed = False
        self.options, raw = ClientOptions.split(config, role="consumer")
        auto_commit = bool_setting(raw, "enable.auto.commit", True)
        auto_store = bool_setting(raw, "enable.auto.offset.store", True)
        interval_s = int_setting(raw, "auto.commit.interval.ms", 5000) / 1000
        self.group = str(raw["group.id"])
        follower = RouteFollower(self.options, "kafka", role="consumer", labels={"group": self.group}, center=center)
        self._follower = follower
        # We commit ourselves, so the ledger is always stored before the broker's offsets.
        s = self._state = ConsumerState(
            options=self.options, group=self.group, follower=follower,
            ledger_store=ledger_store if ledger_store is not None else LedgerStore(follower.center),
            raw_config={**raw, "enable.auto.commit": False, "enable.auto.offset.store": False},
            clock=clock,
        )  # fmt: skip
        self._auto_store = auto_store
        self._fetcher = Fetcher(s, auto_store=auto_store)
        self._committer = Committer(s, self._fetcher, auto_commit=auto_commit, interval_s=interval_s)
        self._assignments = Assignments(s, self._fetcher, self._committer, self)
        self._manual = ManualAssignment(s, self._fetcher, self._assignments)
        leaves = GroupLeaves(follower.center, self.group, member=self.options.client_id, timeout_s=_LEAVE_TIMEOUT_S,
                             hold=follower.hold_center)  # fmt: skip
        self._switch = ConsumerSwitch(s, self._fetcher, self._committer, self._assignments, self._manual, leaves)
        try:
            s.spec = follower.initial_cluster
            s.inner = s.connect(s.spec)
            follower.join(self._switch, s.gate, lambda: s.spec, counts=lambda: ClientCounts(filtered=s.acks.filtered))
        except BaseException:
            follower.close()
            raise
        self._ledger_follower = LedgerFollower(follower.center, self.group, self._merge_stored,
                                               name=f"ledgers-{self.options.client_id}")  # fmt: skip
        self._ledger_follower.start()

    @property
    def _spec(self) -> ClusterSpec:  # RouteClient's cluster in use
        spec: ClusterSpec = self._state.spec
        return spec

    @_spec.setter
    def _spec(self, spec: ClusterSpec) -> None:
        self._state.spec = spec

    @property
    def switches(self) -> int:
        """Switches completed."""
        done: int = self._switch.switches
        return done

    def _merge_stored(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        """Acknowledgements stored by any member (ourselves included) join our filter."""
        with self._state.lock:
            self._state.acks.merge((topic, partition), ledger)

    # -- subscribing ----------------------------------------------------------------------

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: Rebalance | None = None,
        on_revoke: Rebalance | None = None,
        on_lost: Rebalance | None = None,
    ) -> None:
        """As confluent-kafka's: the topics (and their remote copies on the cluster in use); the
        callbacks get the consumer and logical partitions."""
        self._check_open()
        # As creating the consumer: waits out a short etcd outage (hotstandby.etcd.timeout.ms).
        links = self._follower.patiently(self._follower.center.links, "reading the links")
        self._switch.leaves.await_none(self._state.spec)
        with self._state.lock:
            self._assignments.subscribe(list(topics), on_assign, on_revoke, on_lost, links)

    def unsubscribe(self) -> None:
        """Leave the subscription (on the cluster in use; a switch subscribes to nothing)."""
        self._check_open()
        with self._state.lock:
            self._assignments.unsubscribe()

    # -- consuming ------------------------------------------------------------------------

    def poll(self, timeout: float | None = -1) -> Message | None:
        """The next record not acknowledged before (or an error event), as confluent_kafka does."""
        arguments.timeout(timeout)
        self._check_open()
        s, fetcher, assignments = self._state, self._fetcher, self._assignments
        with s.lock:
            if s.lost_tells:  # held back behind the error event the last poll returned
                s.tell_lost()
            fetcher.mark_returned_processed()
            self._committer.maybe_auto_commit()
            if s.ledgers.dirty:  # acknowledgements etcd did not take yet: the commit thread's
                self._committer.background.wake()
            # Fast path: records fetched already, none of the waits below needed.
            if not s.gate.closed and assignments.holding_since is None:
                out: Message | None = fetcher.buffered()
                if out is not None:
                    return out
        for wait in wait_slices(timeout):
            with s.lock:
                if s.gate.closed:  # a switch is under way: nothing it would not account for
                    s.gate.wait_open(wait)
                    continue
                assignments.before_fetch()
                msg = fetcher.next(wait)
                if msg is None:
                    assignments.check_joined()
                    continue
                out = fetcher.accept(msg)
                if out is not None:
                    return out
        return None

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to ``num_messages`` records not acknowledged before, as confluent_kafka's."""
        arguments.integer(num_messages)
        arguments.timeout(timeout)
        self._check_open()
        arguments.num_messages(num_messages)
        out: list[Message] = []
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while len(out) < num_messages:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            msg = self.poll(left if out == [] else 0.0)
            if msg is None:
                break
            out.append(msg)
        return out

    # -- acknowledging --------------------------------------------------------------------

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Mark records processed (for ``enable.auto.offset.store=false``; with it true,
        ``_INVALID_ARG`` as confluent-kafka's)."""
        self._check_open()
        arguments.commit_arguments(message, offsets, store=True)
        if self._auto_store:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                            "StoreOffsets failed: Local: Invalid argument or configuration"))  # fmt: skip
        with self._state.lock:
            positions = self._committer.positions(message, offsets)
            if offsets and not {(tp.topic, tp.partition) for tp in self._state.inner.assignment()} & positions.keys():
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION,
                                                "StoreOffsets failed: Local: Unknown partition"))  # fmt: skip
            for slot, next_offset in positions.items():
                self._state.acks.mark_processed(slot, next_offset)

    def commit(
        self, message: Message | None = None, offsets: list[TopicPartition] | None = None, asynchronous: bool = True
    ) -> list[TopicPartition] | None:
        """Acknowledge, as confluent_kafka commits: the stored offsets, or the given message's
        partition up to it, or the given offsets (with their metadata). Ledger first (in the
        config center), then the broker's offsets, which ``committed()`` reads back after a
        synchronous commit (:mod:`.own_commits`)."""
        self._check_open()
        arguments.commit_arguments(message, offsets, store=False)
        committer = self._committer
        with self._state.lock:
            committed: list[TopicPartition] | None
            if message is None and offsets is None:
                committed = committer.commit_processed(asynchronous=asynchronous)
            else:
                committed = committer.commit(committer.positions(message, offsets), asynchronous=asynchronous,
                                             metadata=committer.metadata(offsets))  # fmt: skip
            return committed

    # -- the rest of the confluent_kafka surface ------------------------------------------

    @property
    def filtered(self) -> int:
        """Records not handed out because they were acknowledged (or in flight) already."""
        count: int = self._state.acks.filtered
        return count

    def assignment(self) -> list[TopicPartition]:
        """The logical partitions assigned on the cluster in use."""
        self._check_open()
        with self._state.lock:
            partitions: list[TopicPartition] = self._assignments.logical_partitions(self._state.inner.assignment())
            return partitions

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """Committed offsets of the physical partitions behind the given logical ones (a topic
        the consumer does not read: its own partitions), this consumer's synchronous commits
        included (:mod:`.own_commits`)."""
        self._check_open()
        s = self._state
        with s.lock:
            physical = [TopicPartition(p, tp.partition) for tp in partitions
                        for p in ([p for p, lg in s.logical.items() if lg == tp.topic] or [tp.topic])]  # fmt: skip
            return self._committer.own.read(s.inner, physical, 30.0 if timeout is None else timeout,
                                            s.options.settings.etcd_timeout)  # fmt: skip

    def close(self) -> None:
        """Commit what was processed (with auto commit), store the ledgers, leave the group.
        Returns once the consumer left the group: the wait for the other members to settle
        goes on in the background, and a cluster that does not answer is not waited for
        (``group_leave``). Closing twice is harmless."""
        if self._closed:
            return
        s = self._state
        with s.lock:
            if not s.closing:
                s.closing = True
                self._revoke_all()
                if self._closed:
                    return  # on_revoke closed it
            self._closed = True
            if self._committer.auto_commit:
                self._committer.commit_processed(asynchronous=True, inline=True)
            # Every acknowledgement was stored or is dirty: storing the others again changes nothing.
            if not s.ledgers.store(s.acks.collect(s.now_ms()), deadline=s.store_deadline()):
                log.warning("consumer.ledgers_unstored", group=self.group, ledgers=len(s.ledgers.dirty))
            inner, spec = s.inner, s.spec
            s.closing = True
        self._committer.background.stop()
        self._switch.leaves.close(inner, spec)
        self._ledger_follower.close()
        self._follower.close()

    def _revoke_all(self) -> None:
        """The application's ``on_lost`` held back, then its ``on_revoke`` of a closing consumer,
        which is still open there (it may commit). What they raise is logged: the consumer
        closes all the same."""
        try:
            self._state.tell_lost()
            self._assignments.revoke_all()
        except Exception as exc:
            log.warning("consumer.on_revoke_failed", group=self.group, error=repr(exc))

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
