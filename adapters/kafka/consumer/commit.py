"""Committing for a Kafka ``Consumer``: acknowledge, store the ledgers, then commit the
broker's offsets — in that order, so a ledger is never behind the broker.

What a commit acknowledges is what confluent_kafka would commit: the offsets marked processed
(stored), a message's partition up to that message — also when it was handed out before a
rebalance — or the given offsets. A message the application got from a cluster the consumer
has since left is acknowledged by identity (it and the records of its partition handed out
before it), never by offset: its offset names another record on the new cluster.

A synchronous commit whose records were handed out before another member claimed their
partition (a switch or a rebalance gave it away meanwhile) raises ``ILLEGAL_GENERATION``, as
Kafka refuses a commit from a member of an older generation: that member may have handed the
records out again already. The acknowledgements are kept and merged all the same.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka.consumer.background_commit import BackgroundCommits, broker_offsets
from hotstandby.adapters.kafka.consumer.fetch import Fetcher, message_identity
from hotstandby.adapters.kafka.consumer.named_partitions import named_slot
from hotstandby.adapters.kafka.consumer.own_commits import OwnCommits
from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot, log
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.ledger.ack_tracker import LedgerKey

__all__ = ["Committer"]


class Committer:
    """Acknowledging and committing (see the module doc); auto commit too."""

    def __init__(self, state: ConsumerState, fetcher: Fetcher, *, auto_commit: bool, interval_s: float) -> None:
        self._s = state
        self._fetcher = fetcher
        self.auto_commit = auto_commit
        self._interval_s = interval_s
        self._last_auto_commit = time.monotonic()
        self.background = BackgroundCommits(state)
        self.own = OwnCommits()
        # Ledgers acknowledged by identity since the last commit: the next synchronous one
        # reports whether they were late.
        self._by_identity: set[LedgerKey] = set()

    def positions(self, message: Message | None, offsets: list[TopicPartition] | None) -> dict[Slot, int]:
        """What ``commit``/``store_offsets`` with these arguments covers: per physical partition,
        the offset after it (empty when ``message`` was acknowledged by identity instead)."""
        acks = self._s.acks
        if message is not None:
            physical = str(getattr(message, "physical_topic", None) or message.topic())
            slot, offset = (physical, message.partition() or 0), message.offset() or 0
            rid = message_identity(message)
            timestamp = message.timestamp()[1]
            if acks.handed_out(slot, offset, rid, timestamp):
                # Handed out on this cluster, before or after a rebalance: the commit covers it
                # and the earlier records of its partition, as confluent_kafka's does — those of
                # the topic's remote copies too, which the application sees as the same partition.
                return {**acks.covered_before(slot, offset), slot: offset + 1}
            # Handed out on a cluster this consumer has left: its offset names another record
            # here, so it (and what it covers there) is acknowledged by identity only.
            now_ms = self._s.now_ms()
            left = acks.acknowledge_left_behind(slot, offset, rid, timestamp, now_ms)
            if left is not None:
                log.info("consumer.acknowledged_after_switch", topic=physical, partition=slot[1], offset=offset,
                         cluster=self._s.spec.name)  # fmt: skip
            elif rid is not None:  # acknowledged already (or from a cluster left before the last)
                key = acks.acknowledge_identity(str(message.topic()), rid, now_ms)
                left = {key} if key is not None else set()
            else:
                self._s.seldom.info("consumer.ack_without_identity_ignored", topic=physical, partition=slot[1],
                                    offset=offset, cluster=self._s.spec.name)  # fmt: skip
            self._s.ledgers.acknowledged(left or set(), left_behind=True)
            self._by_identity |= left or set()
            return {}
        if offsets is not None:
            return {slot: tp.offset for slot, tp in self._named(offsets)}
        everything: dict[Slot, int] = acks.next_positions()
        return everything

    def metadata(self, offsets: list[TopicPartition] | None) -> dict[Slot, str]:
        """The commit metadata given with ``offsets``, per physical partition."""
        given = [tp for tp in offsets or [] if tp.metadata is not None]  # usually none: nothing to name again
        return {slot: str(tp.metadata) for slot, tp in self._named(given)}

    def _named(self, offsets: list[TopicPartition]) -> list[tuple[Slot, TopicPartition]]:
        # Offsets name physical partitions: the logical topic's own ("orders"), a remote copy
        # ("kafka-b.orders"), or the copy a position taken from its message came from.
        return [(named_slot(self._s, tp.topic, tp.partition, tp.offset - 1), tp) for tp in offsets]

    def commit_processed(self, *, asynchronous: bool, inline: bool = False) -> list[TopicPartition] | None:
        """Commit what was marked processed (what ``poll`` returned, with auto offset store)."""
        self._fetcher.mark_returned_processed()
        return self.commit(self._s.acks.processed_positions(), asynchronous=asynchronous, inline=inline)

    def maybe_auto_commit(self) -> None:
        if self.auto_commit and time.monotonic() >= self._last_auto_commit + self._interval_s:
            self.commit(self._s.acks.processed_positions(), asynchronous=True)

    def commit(
        self,
        positions: dict[Slot, int],
        *,
        asynchronous: bool = False,
        inline: bool = False,
        metadata: dict[Slot, str] | None = None,
    ) -> list[TopicPartition] | None:
        """Acknowledge, store the ledgers, then commit on the broker (with ``metadata``). A
        synchronous commit whose ledgers etcd did not take within its timeout fails as
        confluent_kafka's does when the broker does not answer (``_TIMED_OUT``); the
        acknowledgements are kept and stored later; its broker commit follows asynchronously,
        and ``committed()`` reads it back (:mod:`.own_commits`). An asynchronous one (auto commit
        too) never raises: what is not stored is retried. It returns once the acknowledgements
        are in memory; the rest is the commit thread's (:mod:`.background_commit`), unless
        ``inline`` (a rebalance callback, close: before the partitions or the consumer go)."""
        s = self._s
        self._last_auto_commit = time.monotonic()
        for slot, next_offset in positions.items():
            s.acks.acknowledge_through(slot, next_offset)
        keys = s.acks.collect(s.now_ms())
        by_identity, self._by_identity = self._by_identity, set()
        if asynchronous and not inline:
            s.ledgers.acknowledged(keys)
            self.background.request(positions, metadata or {})
            return None
        deadline = None if asynchronous else s.store_deadline()
        if not s.ledgers.store(keys, deadline=deadline) and deadline is not None:
            timeout = s.options.settings.etcd_timeout
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                            f"commit: the ledger could not be stored in the config center within "
                                            f"{timeout} s; it is kept and stored later"))  # fmt: skip
        late = s.ledgers.take_late(keys | by_identity)
        offsets = broker_offsets(positions, metadata or {})
        if offsets:
            # Always asynchronous on the broker: a synchronous commit waits without a limit for
            # a coordinator, and a dead cluster would hold the client (and its switch) forever.
            # The ledger already holds the acknowledgement; the broker's offsets only save
            # re-reading, and the next commit stores them.
            self._broker_commit(offsets, "consumer.broker_commit_failed")
        if late and deadline is not None:
            # As Kafka refuses a commit from a member whose partitions were given to another.
            raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION,
                                            f"commit: partitions {sorted(late)} were claimed by another member of "
                                            f"group {s.group} after these records were handed out; they may be "
                                            f"delivered again (their acknowledgements were merged)"))  # fmt: skip
        if asynchronous or not offsets:
            return None
        self.own.sent(s.inner, offsets)  # committed() reads them back (own_commits)
        return offsets

    def settle(self) -> None:
        """Before a switch: store every acknowledgement (ledger first), then commit on the old
        cluster if it answers. With auto commit, what was returned counts as processed; without,
        what the application did not commit stays unacknowledged (see AckTracker.reset)."""
        s = self._s
        if self.auto_commit:
            self._fetcher.mark_returned_processed()
            s.acks.acknowledge_processed()
        keys = s.acks.collect(s.now_ms()) | s.ledgers.owned
        if not s.ledgers.store(keys, deadline=s.store_deadline()):
            raise ConfigCenterUnavailable("the ledgers could not be stored before the switch; it is retried")
        acknowledged = s.acks.acknowledged_positions()
        if acknowledged:  # the ledger holds them; the old cluster may be gone
            self._broker_commit(broker_offsets(acknowledged, {}), "consumer.commit_failed")

    def _broker_commit(self, offsets: list[TopicPartition], failed_event: str) -> None:
        try:
            self._s.inner.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            log.warning(failed_event, cluster=self._s.spec.name, error=str(exc))
