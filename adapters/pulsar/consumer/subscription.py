"""What the consumers of one subscription (and topic) made by one client share.

Consumers of a Shared or Key_Shared subscription in one process receive different messages of
the same partitions; after a switch a message can reach the new cluster twice (replicated,
and re-sent by its producer), and the two copies may go to two consumers. With one
:class:`AckTracker` for all of them, a copy is filtered while its twin is handed out to any
of them, and acknowledgements count at once for all. The state also stores the ledgers
(every 100 ms, then sends the broker acknowledgements they hold) and merges what consumers in
other processes store.
"""

from __future__ import annotations

import threading
import time

import pulsar

from hotstandby.adapters.pulsar.topics import TopicSelection
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterError
from hotstandby.failover.ledger.ack_tracker import AckTracker, Slot
from hotstandby.failover.ledger.follower import LedgerFollower
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.logs import get_logger

__all__ = ["SubscriptionState"]

log = get_logger("hotstandby.pulsar.consumer")

_FLUSH_S = 0.1  # how long acknowledgements wait to be stored together (pulsar groups acks for 100 ms too)


# (consumer, message, cumulative, slot, position, epoch): see after_store. A plain tuple: one
# is made per message.
_BrokerAck = tuple[pulsar.Consumer, "pulsar.Message | pulsar.MessageId", bool, "Slot | None", int, int]
_Send = tuple[pulsar.Consumer, "pulsar.Message | pulsar.MessageId", bool]  # (consumer, message, cumulative)


def now_ms() -> int:
    return int(time.time() * 1000)


class SubscriptionState:
    """Shared by the consumers of ``subscription`` on ``topic`` (a topic, or a
    :class:`TopicSelection` of several) of one client; the consumers hold :attr:`lock` while
    they use :attr:`acks`."""

    def __init__(
        self,
        center: ConfigCenter,
        topic: str | TopicSelection,
        subscription: str,
        owner: str,
        *,
        store: LedgerStore | None = None,
    ) -> None:
        self.topics = topic if isinstance(topic, TopicSelection) else TopicSelection.of(topic)
        self.topic = self.topics.name
        self.subscription = subscription
        self._owner = owner
        self.lock = threading.RLock()
        self.acks = AckTracker()
        # Per slot, the position the next message received gets (the tracker's order); the
        # consumers number their messages under the lock.
        self.positions: dict[Slot, int] = {}
        self._epoch = 0  # switches so far: a position names a message only within one
        self._dirty: set[tuple[str, int]] = set()  # ledgers changed since the last store
        self._broker_acks: list[_BrokerAck] = []  # sent once the ledgers are stored
        self._store = store if store is not None else LedgerStore(center)
        self.users = 0
        self._follower = LedgerFollower(center, subscription, self._merge_stored, name=f"ledgers-{subscription}")
        self._follower.start()
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, daemon=True, name=f"hotstandby-acks-{subscription}")
        self._flusher.start()

    @property
    def ledger_store(self) -> LedgerStore:
        """Where this subscription's ledgers are kept."""
        return self._store

    def reset(self) -> None:
        """A switch: positions and what was handed out belong to the old cluster."""
        with self.lock:
            self.changed()  # acknowledged since the last store (while switching): into the ledgers first
            self.positions.clear()
            self.acks.reset()
            self._epoch += 1

    def changed(self) -> None:
        """Acknowledgements were recorded in :attr:`acks`: collect them for the next store."""
        self._dirty |= self.acks.collect(now_ms())

    def changed_ledger(self, key: tuple[str, int] | None) -> None:
        if key is not None:
            self._dirty.add(key)

    def after_store(
        self,
        consumer: pulsar.Consumer,
        message: pulsar.Message | pulsar.MessageId,
        *,
        cumulative: bool = False,
        slot: Slot | None = None,
        position: int = -1,
    ) -> None:
        """Acknowledge ``message`` on the broker (with ``consumer``) once the ledgers recorded so
        far are stored. ``slot`` and ``position`` (a consumer that reads its partitions alone:
        Exclusive, Failover) allow the acknowledgement to be folded into a cumulative one."""
        self._broker_acks.append((consumer, message, cumulative, slot, position, self._epoch))

    def load(self, partitions: int) -> None:
        """Merge the stored ledgers of every partition (what other consumers stored)."""
        for partition in range(partitions):
            ledger = self._store.load(self.subscription, self.topic, partition).ledger
            with self.lock:
                self.acks.merge((self.topic, partition), ledger)

    def load_all(self) -> None:
        """Merge the stored ledgers of every topic the selection covers (several topics, or a
        pattern's, which are not known in advance: one read of the subscription's ledgers)."""
        for (topic, partition), doc in self._store.load_group(self.subscription).items():
            self._merge_stored(topic, partition, doc.ledger)

    def _merge_stored(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        if self.topics.covers(topic):
            with self.lock:
                self.acks.merge((topic, partition), ledger)

    def _flush_loop(self) -> None:
        failing_since: float | None = None
        failures = 0
        while not self._stop.wait(_FLUSH_S):
            try:
                self.flush()
            except Exception as exc:  # etcd unreachable: acknowledgements wait (and filter), nothing is lost
                failures += 1
                if failing_since is None:  # once per outage, not every 100 ms
                    failing_since = time.monotonic()
                    log.warning("consumer.ledger_store_failed", subscription=self.subscription, error=str(exc))
                continue
            if failing_since is not None:
                log.warning("consumer.ledger_stored_again", subscription=self.subscription, failures=failures,
                            after_s=round(time.monotonic() - failing_since, 1))  # fmt: skip
                failing_since, failures = None, 0

    def flush(self) -> None:
        """Store the changed ledgers, then send the acknowledgements they hold to the broker.
        Ledgers are merged on save: every consumer of the subscription writes them."""
        with self.lock:
            self.changed()
            dirty, self._dirty = self._dirty, set()
            pending, self._broker_acks = self._broker_acks, []
            sends = self._folded(pending)
            ledgers = {key: self.acks.ledger(key).copy() for key in dirty}
        try:
            if ledgers:  # one etcd transaction, whatever the number of partitions
                versions = {key: (ledger, 0) for key, ledger in ledgers.items()}
                self._store.save_all(self.subscription, versions, owner=self._owner)
        except BaseException:
            with self.lock:
                self._dirty |= dirty
                self._broker_acks[:0] = pending
            raise
        failed: list[str] = []
        for consumer, message, cumulative in sends:
            try:
                if cumulative:
                    consumer.acknowledge_cumulative(message)
                else:
                    consumer.acknowledge(message)
            except pulsar.PulsarException as exc:  # the ledger holds it; the broker redelivers, we filter
                failed.append(str(exc))
        if failed:  # one event per store, not per message
            log.info("consumer.broker_ack_failed", subscription=self.subscription, count=len(failed), error=failed[0])

    def _folded(self, pending: list[_BrokerAck]) -> list[_Send]:
        """The broker acknowledgements to send for ``pending`` (lock held, acknowledgements
        collected): where every message a slot delivered up to the newest one acknowledged is
        settled (acknowledged or filtered, none given back) and that one is not batched, one
        cumulative acknowledgement of it — a broker acknowledgement per message costs the
        client more than the rest of its handling — else one per message."""
        sends: list[_Send] = []
        groups: dict[tuple[int, Slot], list[_BrokerAck]] = {}
        for ack in pending:
            consumer, message, cumulative, slot, _, epoch = ack
            if slot is None or epoch != self._epoch:
                sends.append((consumer, message, cumulative))
            else:
                groups.setdefault((id(consumer), slot), []).append(ack)
        for (_, slot), acks in groups.items():
            newest = max(acks, key=lambda a: a[4])
            # Not at a message of a batch: for one acknowledged up to the middle of its batch,
            # pulsar-client sends a cumulative acknowledgement of the entry before, and for the
            # first entry of a ledger the reference broker takes that for all of it
            # (docs/refcluster.md).
            if self.acks.settled_through(slot, newest[4]) and newest[1].message_id().batch_index() < 0:
                sends.append((newest[0], newest[1], True))
            else:
                sends.extend((a[0], a[1], False) for a in acks)
        return sends

    def close(self) -> None:
        """The last consumer left: store what is left, stop following."""
        self._stop.set()
        self._flusher.join(5)
        try:
            self.flush()
        except ConfigCenterError as exc:  # etcd unreachable: nobody is left to store them
            log.warning("consumer.acknowledgements_not_stored", subscription=self.subscription,
                        messages=len(self._broker_acks), error=str(exc))  # fmt: skip
        finally:
            self._follower.close()
            self._store.forget(self.subscription, list(self.acks.ledgers))  # the client's store outlives this
