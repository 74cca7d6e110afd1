"""How a Pulsar ``Consumer`` takes acknowledgements (see :mod:`hotstandby.adapters.pulsar.consumer.consumer`).

``acknowledge`` and ``acknowledge_cumulative`` record the messages' identities in the
subscription's ack tracker (the cluster-neutral form of Pulsar's individually deleted
messages); every 100 ms the changed ledgers are stored and only then are the
acknowledgements sent to the broker, so a broker never forgets a message the ledger does not
hold (an Exclusive or Failover consumer's as one cumulative acknowledgement where the
acknowledged prefix is settled, at a message not sent in a batch). ``negative_acknowledge``
and ``redeliver_unacknowledged_messages`` give messages back: they are handed out again.
"""

from __future__ import annotations

from collections.abc import Callable

import pulsar

from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.adapters.pulsar.consumer.handed import Handed, HandedOut, MessageKey, Slot
from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState, now_ms
from hotstandby.adapters.pulsar.topics import TopicSelection
from hotstandby.failover.identity import RecordId
from hotstandby.logs import Seldom

__all__ = ["Acknowledger"]


class Acknowledger:
    """The acknowledging half of a :class:`hotstandby.adapters.pulsar.consumer.consumer.Consumer`:
    over the subscription's state and what the consumer handed out; ``current`` is the
    pulsar-client consumer in use, ``check_open`` raises ``pulsar.AlreadyClosed`` once the
    consumer is closed."""

    def __init__(self, state: SubscriptionState, out: HandedOut, topics: TopicSelection, *, cumulative: bool,
                 shared: bool, current: Callable[[], pulsar.Consumer], check_open: Callable[[], None],
                 seldom: Seldom) -> None:  # fmt: skip
        self._state = state
        self._lock = state.lock
        self._out = out
        self._topics = topics
        self._topic = topics.name
        self._cumulative = cumulative  # Exclusive or Failover
        self._shared = shared  # Shared or Key_Shared
        self._current = current
        self._check_open = check_open
        self._seldom = seldom

    def _by_id(self, message: pulsar.Message | pulsar.MessageId) -> pulsar.Message | None:
        """The message handed out under message id ``message`` (a message is itself); None when
        no message handed out and not acknowledged has that id."""
        return message if isinstance(message, pulsar.Message) else self._out.by_id(message)

    def _find(self, message: pulsar.Message | pulsar.MessageId) -> tuple[pulsar.Message | None, Handed | None]:
        """The message ``message`` names (itself, or the one handed out under that id: None if
        none) and what it is handed out as on the current cluster (None: not any more)."""
        key: MessageKey | None = getattr(message, "_hs_key", None)
        handed = None if key is None else self._out.current.get(key)
        if handed is not None and handed.message is message:  # the common case: no search
            return message, handed
        found = self._by_id(message)
        return found, None if found is None else self._out.of(found)

    def acknowledge(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.acknowledge` (a message or its id): stored in the ledger,
        then sent to the broker."""
        with self._lock:
            self._check_open()
            found, handed = self._find(message)
            if found is None:
                self._acknowledge_unknown_id(message, cumulative=False)
                return
            if handed is None:
                self._acknowledge_elsewhere(found)
                return
            del self._out.current[handed.key]
            self._state.acks.acknowledge(handed.slot, handed.position)  # collected at the next store
            slot = handed.slot if self._cumulative else None
            self._state.after_store(self._current(), handed.message, slot=slot, position=handed.position)

    def acknowledge_cumulative(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.acknowledge_cumulative` (a message or its id): every message
        of its partition handed out up to it (Exclusive and Failover subscriptions; Shared and
        Key_Shared ones raise ``pulsar.CumulativeAcknowledgementNotAllowedError``)."""
        if self._shared:
            raise pulsar.CumulativeAcknowledgementNotAllowedError(
                "Pulsar error: CumulativeAcknowledgementNotAllowedError"
            )
        with self._lock:
            self._check_open()
            found, handed = self._find(message)
            if found is None:
                self._acknowledge_unknown_id(message, cumulative=True)
                return
            message = found
            if handed is None:
                self._acknowledge_left_cumulatively(message)
                return
            # What the partition handed out on the cluster left before the switch came first.
            self._acknowledge_left(handed.slot, None)
            self._state.acks.acknowledge_through(handed.slot, handed.position + 1)
            current = self._out.current
            covered = [h for h in current.values() if h.slot == handed.slot and h.position <= handed.position]
            for h in covered:
                del current[h.key]
            # Collected at the next store; in flight (filtered) until then.
            if message.message_id().batch_index() < 0:
                self._state.after_store(self._current(), message, cumulative=True)
            else:
                # A cumulative acknowledgement of a batched message can reach the reference
                # broker as one of the whole topic (docs/refcluster.md): each one instead.
                for h in covered:
                    self._state.after_store(self._current(), h.message)

    def _acknowledge_unknown_id(self, mid: pulsar.MessageId, *, cumulative: bool) -> None:
        """A message id of no message handed out here: nothing to record in the ledger (its
        identity is unknown), so the broker alone gets it at once, as pulsar-client sends it:
        what pulsar-client refuses (an id without a topic on a multi-topic consumer:
        ``OperationNotSupported``) is raised."""
        self._seldom.info("consumer.ack_of_unknown_message_id", topic=self._topic, message_id=str(mid))
        (self._current().acknowledge_cumulative if cumulative else self._current().acknowledge)(mid)

    def _acknowledge_elsewhere(self, message: pulsar.Message) -> None:
        """A message handed out on a cluster the consumer has left (or acknowledged already):
        by identity only — the broker that delivered it is not this one."""
        key: MessageKey | None = getattr(message, "_hs_key", None)
        rid = key if isinstance(key, RecordId) else identity_of(message)
        if rid is None:
            self._seldom.info("consumer.ack_without_identity_ignored", topic=self._topic,
                             message_id=str(message.message_id()))  # fmt: skip
            return
        logical = self._topics.logical(str(message.topic_name()))
        self._state.changed_ledger(self._state.acks.acknowledge_identity(logical, rid, now_ms()))

    def _acknowledge_left_cumulatively(self, message: pulsar.Message) -> None:
        """A cumulative acknowledgement of a message handed out on the cluster the consumer has
        just left covers what was handed out before it there, from its partition: by identity."""
        handed = self._out.left_of(message)
        if handed is not None:
            self._acknowledge_left(handed.slot, handed.position)
        else:
            self._acknowledge_elsewhere(message)

    def _acknowledge_left(self, slot: Slot, through: int | None) -> None:
        """Acknowledge by identity what ``slot`` handed out on the cluster left last, up to
        position ``through`` (None: all of it)."""
        for h in self._out.take_left(slot, through):
            if h.rid is not None:
                logical = self._topics.logical(h.slot[0])
                self._state.changed_ledger(self._state.acks.acknowledge_identity(logical, h.rid, now_ms()))

    def negative_acknowledge(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.negative_acknowledge` (a message or its id): it comes again."""
        with self._lock:
            found = self._by_id(message)
            if found is None:
                self._current().negative_acknowledge(message)
                return
            message = found
            handed = self._out.of(message)
            if handed is None:
                return  # from a cluster we left: it was not acknowledged, so it comes again there
            del self._out.current[handed.key]
            self._state.acks.release(handed.slot, handed.position)
            self._current().negative_acknowledge(message)

    def redeliver_unacknowledged_messages(self) -> None:
        """Everything handed out and not acknowledged comes again."""
        with self._lock:
            self.give_back()
            self._current().redeliver_unacknowledged_messages()

    def give_back(self) -> None:
        """With the lock held: what is handed out and not acknowledged is no longer in flight
        (it comes again: a redelivery or a seek)."""
        for handed in self._out.current.values():
            self._state.acks.release(handed.slot, handed.position)
        self._out.current.clear()
