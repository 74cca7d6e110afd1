"""``Consumer`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.Consumer across switches,
never handing a message out again once it was acknowledged.

* Each message's ``hs-id`` is checked against the subscription's ack ledger (per logical topic
  and partition, in the config center): a message acknowledged before — on any cluster, by
  any consumer of the subscription, before a restart or a switch — is acknowledged on the
  broker and skipped (counted in :attr:`Consumer.filtered`). A message redelivered while still
  handed out here (pulsar-lite may dispatch an entry twice) is skipped too.
* ``acknowledge`` and ``acknowledge_cumulative`` record the messages' identities (the
  cluster-neutral form of Pulsar's individually deleted messages); every 100 ms the changed
  ledgers are stored and only then are the acknowledgements sent to the broker, so a broker
  never forgets a message the ledger does not hold (an Exclusive or Failover consumer's as
  one cumulative acknowledgement where the acknowledged prefix is settled, at a message not
  sent in a batch).
  ``negative_acknowledge`` and ``redeliver_unacknowledged_messages`` give messages back: they
  are handed out again.
* Ledgers are written by every consumer of the subscription (a save merges; nobody owns a
  Shared subscription's partition), and each consumer merges what the others store.
* In a switch (the client's, see :mod:`hotstandby.adapters.pulsar.client`) the consumer
  stops handing out messages while the client's switch gate is closed, stores its ledgers and
  sends the pending acknowledgements to the old cluster, then subscribes on the new one where
  :mod:`hotstandby.adapters.pulsar.start_position` says; whatever is read again is
  filtered. Messages handed out and not acknowledged at the switch are delivered again there
  (at least once); one acknowledged after the switch counts by its identity, and a
  cumulative acknowledgement covers what its partition handed out before it, on either
  cluster. A message received just as a switch begins is kept: handed out if the switch
  fails, read again on the new cluster if it succeeds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM, identity_in, identity_of
from hotstandby.adapters.pulsar.handed import Handed, HandedOut, MessageKey, Slot, stored_at
from hotstandby.adapters.pulsar.start_position import start_after_copies
from hotstandby.adapters.pulsar.subscription import SubscriptionState, now_ms
from hotstandby.adapters.pulsar.waits import deadline_of, slice_ms
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigCenterUnavailable, ConfigError
from hotstandby.failover.identity import RecordId
from hotstandby.logs import Seldom, get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client import Client

__all__ = ["Consumer"]

log = get_logger("hotstandby.pulsar.consumer")


class Consumer:
    """Drop-in replacement for :class:`pulsar.Consumer` (see the module doc)."""

    def __init__(self, client: Client, topic: str, subscription_name: str, kwargs: dict[str, Any]) -> None:
        if "message_listener" in kwargs:
            raise ConfigError("message_listener is not supported: use receive() or batch_receive()")
        if not isinstance(topic, str):
            raise ConfigError("subscribe to one topic (partitioned or not); lists and patterns are not supported")
        self._client = client
        self._topic = topic
        self._subscription = subscription_name
        self._kwargs = dict(kwargs)
        self._state = client.subscription_state(topic, subscription_name)
        self._lock = self._state.lock
        # The client's gate: closed while a switch runs. Read under our lock: the switch takes
        # it after closing the gate (to store), so a message accepted here is stored then.
        self._gate = client.gate
        self._out = HandedOut()
        self._held: list[pulsar.Message] = []  # received while a switch ran (see _hold)
        self._closed = False
        self._seldom = Seldom(log)  # events that can happen per message
        partitions = client.inner.get_topic_partitions(topic)
        client.follower.patiently(lambda: self._state.load(len(partitions)), "subscribing")
        consumer_type = kwargs.get("consumer_type", pulsar.ConsumerType.Exclusive)
        # Exclusive and Failover: one consumer reads a partition, in the broker's order, so an
        # acknowledged prefix can be sent to the broker as one cumulative acknowledgement.
        self._cumulative = consumer_type in (pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover)
        self._slot = self._single_slot(partitions)
        # An Exclusive subscription of a topic that is not partitioned has one consumer, which
        # receives every message in the broker's order: its acknowledged prefix says where to
        # start on the cluster the copies in it came from (see start_position.start_after_copies).
        self._track_origins = consumer_type == pulsar.ConsumerType.Exclusive and len(partitions) == 1
        self._inner = self._subscribe(client.inner)

    def _single_slot(self, partitions: list[str]) -> tuple[str, int] | None:
        """The slot every message comes from when the topic is not partitioned (else None: the
        message's topic names its partition)."""
        return (self._topic, 0) if len(partitions) == 1 else None

    def _subscribe(self, client: pulsar.Client, *, initial: pulsar.InitialPosition | None = None) -> pulsar.Consumer:
        kwargs = dict(self._kwargs)
        if initial is not None:
            kwargs["initial_position"] = initial
        return client.subscribe(self._topic, self._subscription, **kwargs)

    # -- receiving --------------------------------------------------------------------------

    @property
    def filtered(self) -> int:
        """Messages not handed out (by this client's consumers of the subscription): acknowledged
        before, or handed out already."""
        filtered: int = self._state.acks.filtered
        return filtered

    def topic(self) -> str:
        return self._topic

    def subscription_name(self) -> str:
        return self._subscription

    def receive(self, timeout_millis: int | None = None) -> pulsar.Message:
        """As :meth:`pulsar.Consumer.receive`; raises ``pulsar.Timeout`` after ``timeout_millis``
        (None or negative: no limit)."""
        deadline = deadline_of(timeout_millis)
        while True:
            wait_ms = slice_ms(deadline)  # short, so a switch can swap the pulsar-client object
            if wait_ms < 0:
                raise pulsar.Timeout("no message within the timeout")
            # Unlocked read (once per message): a switch beginning meanwhile is noticed below.
            inner = self._inner
            if self._gate.closed or self._closed or self._held:
                inner = self._current(wait_ms / 1000)
                if inner is None:
                    continue
                out = self._take_held()
                if out is not None:
                    return out
            try:
                msg = inner.receive(wait_ms)
            except pulsar.Timeout:
                continue
            except pulsar.AlreadyClosed:
                continue  # given up in a switch: the next slice reads the new cluster
            with self._lock:
                if self._gate.closed or inner is not self._inner:
                    self._hold(inner, [msg])
                    continue
                out = self._accept(msg)
            if out is not None:
                return out

    def batch_receive(self) -> list[pulsar.Message]:
        """As :meth:`pulsar.Consumer.batch_receive` (the subscription's batch receive policy)."""
        inner = self._current(1.0)
        if inner is None:
            return []
        out = self._take_held()
        if out is not None:
            return [out]
        try:
            batch = list(inner.batch_receive())
        except pulsar.AlreadyClosed:
            return []
        with self._lock:
            if self._gate.closed or inner is not self._inner:
                self._hold(inner, batch)
                return []
            return [out for out in map(self._accept, batch) if out is not None]

    def _current(self, wait: float) -> pulsar.Consumer | None:
        with self._lock:
            if self._closed:
                raise pulsar.AlreadyClosed("Consumer has been closed")
            if not self._gate.closed:
                return self._inner
        self._gate.wait_open(wait)  # not under our lock: the switch takes it while the gate is closed
        return None

    def _hold(self, inner: pulsar.Consumer, batch: list[pulsar.Message]) -> None:
        """Messages received while a switch runs (lock held): those of the consumer in use are
        kept for after it, should the switch fail; those of a consumer given up come again
        on the new cluster."""
        if inner is self._inner:
            self._held.extend(batch)

    def _take_held(self) -> pulsar.Message | None:
        """A message received during a switch that failed, if one is left to hand out."""
        with self._lock:
            while self._held and not self._gate.closed:
                out = self._accept(self._held.pop(0))
                if out is not None:
                    return out
        return None

    def _accept(self, msg: pulsar.Message) -> pulsar.Message | None:
        """``msg`` or, when it is not to be handed out, None (lock held). Once per message: each
        call into the client library costs about 0.5 µs, each Python call a tenth of that."""
        properties = msg.properties()
        rid = identity_in(properties, msg)
        key: MessageKey = rid if rid is not None else stored_at(msg)
        handed = self._out.current
        if handed and key in handed and not self._handed_again(key, rid, msg):
            return None
        slot = self._slot or (str(msg.topic_name()), 0)
        positions = self._state.positions
        position = positions.get(slot, 0)
        positions[slot] = position + 1
        origin = None
        if self._track_origins and rid is not None:
            source_position = properties.get(REPL_SOURCE_POSITION)
            if source_position is not None:
                origin = (properties.get(REPLICATED_FROM), source_position, rid)
        acks = self._state.acks
        # Pulsar positions are the receive order; a publish time is not needed (0).
        if not acks.offer(self._topic, slot, position, rid, 0, origin):
            acks.acknowledge(slot, position)
            self._state.after_store(self._inner, msg, slot=slot if self._cumulative else None, position=position)
            return None
        handed[key] = Handed(key, slot, position, rid, msg)
        msg._hs_key = key  # pulsar.Message is a plain Python object
        return msg

    def _handed_again(self, key: MessageKey, rid: RecordId | None, msg: pulsar.Message) -> bool:
        """``key`` is handed out already and not acknowledged: dispatched twice by the broker, or
        another stored copy of it (a replicated copy and its re-sent twin, one of them
        negatively acknowledged and now redelivered) — the one handed out stands for both
        (False: filtered). Only the same stored message redelivered (ack timeout) is handed
        out again (True)."""
        handed = self._out.current[key]
        acks = self._state.acks
        if msg.redelivery_count() <= handed.message.redelivery_count() or (
            rid is not None and stored_at(msg) != stored_at(handed.message)
        ):
            acks.filtered += 1
            self._state.after_store(self._inner, msg)  # the broker may drop this one
            return False
        acks.release(handed.slot, handed.position)
        del self._out.current[key]
        return True

    # -- acknowledging ----------------------------------------------------------------------

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
            self._state.after_store(self._inner, handed.message, slot=slot, position=handed.position)

    def acknowledge_cumulative(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.acknowledge_cumulative` (a message or its id): every message
        of its partition handed out up to it (Exclusive and Failover subscriptions)."""
        with self._lock:
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
                self._state.after_store(self._inner, message, cumulative=True)
            else:
                # A cumulative acknowledgement of a batched message can reach the reference
                # broker as one of the whole topic (docs/refcluster.md): each one instead.
                for h in covered:
                    self._state.after_store(self._inner, h.message)

    def _acknowledge_unknown_id(self, mid: pulsar.MessageId, *, cumulative: bool) -> None:
        """A message id of no message handed out here: nothing to record in the ledger (its
        identity is unknown), so the broker alone gets it, as pulsar-client would send it."""
        self._seldom.info("consumer.ack_of_unknown_message_id", topic=self._topic, message_id=str(mid))
        self._state.after_store(self._inner, mid, cumulative=cumulative)

    def _acknowledge_elsewhere(self, message: pulsar.Message) -> None:
        """A message handed out on a cluster the consumer has left (or acknowledged already):
        by identity only — the broker that delivered it is not this one."""
        key: MessageKey | None = getattr(message, "_hs_key", None)
        rid = key if isinstance(key, RecordId) else identity_of(message)
        if rid is None:
            self._seldom.info("consumer.ack_without_identity_ignored", topic=self._topic,
                             message_id=str(message.message_id()))  # fmt: skip
            return
        self._state.changed_ledger(self._state.acks.acknowledge_identity(self._topic, rid, now_ms()))

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
                self._state.changed_ledger(self._state.acks.acknowledge_identity(self._topic, h.rid, now_ms()))

    def negative_acknowledge(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.negative_acknowledge` (a message or its id): it comes again."""
        with self._lock:
            found = self._by_id(message)
            if found is None:
                self._inner.negative_acknowledge(message)
                return
            message = found
            handed = self._out.of(message)
            if handed is None:
                return  # from a cluster we left: it was not acknowledged, so it comes again there
            del self._out.current[handed.key]
            self._state.acks.release(handed.slot, handed.position)
            self._inner.negative_acknowledge(message)

    def redeliver_unacknowledged_messages(self) -> None:
        with self._lock:
            for handed in self._out.current.values():
                self._state.acks.release(handed.slot, handed.position)
            self._out.current.clear()
            self._inner.redeliver_unacknowledged_messages()

    def unsubscribe(self) -> None:
        with self._lock:
            self._inner.unsubscribe()

    def close(self) -> None:
        """Store the acknowledgements, send them, close (the client stops moving this consumer).
        While etcd is unreachable it waits up to the etcd timeout for it; acknowledgements it
        could not store stay with the subscription's other consumers of this client, or else
        are logged as not stored (those messages come again: at least once)."""
        with contextlib.suppress(ConfigCenterUnavailable):  # logged by the state
            self._client.follower.patiently(self._state.flush, "storing acknowledgements")
        with self._lock:
            self._closed = True
            inner = self._inner
        self._client.retire(self, inner)
        self._client.release_subscription_state(self._state)

    # -- switching (run by the client, its gate closed from store to commit) -------------------

    def store(self) -> None:
        """Store the ledgers and acknowledge on the old cluster (nothing is handed out now)."""
        self._state.flush()

    @property
    def state(self) -> SubscriptionState:
        return self._state

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """Subscribe on the new cluster; the returned step puts it in place (the client resets
        the shared state first, once)."""
        partitions = client.get_topic_partitions(self._topic)
        self._state.load(len(partitions))  # what other processes stored
        new = self._subscribe(client, initial=pulsar.InitialPosition.Earliest)
        if self._track_origins:
            origin = next(iter(self._state.acks.last_acked_origin.values()), None)
            new = start_after_copies(client, new, spec, topic=self._topic, origin=origin,
                                     route=self._client.follower.route,
                                     resubscribe=lambda: self._subscribe(client))  # fmt: skip

        def commit() -> None:
            with self._lock:
                self._inner = new
                self._slot = self._single_slot(partitions)
                self._held.clear()  # not acknowledged: they come again on the new cluster
                left = self._out.leave()  # acknowledged from now on by identity (_acknowledge_elsewhere)
            log.info("consumer.switched", topic=self._topic, subscription=self._subscription, source=source,
                     to=spec.name, unacknowledged=left)  # fmt: skip

        return commit
