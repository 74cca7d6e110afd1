"""``Consumer`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.Consumer across switches,
never handing a message out again once it was acknowledged.

* Each message's ``hs-id`` is checked against the subscription's ack ledger (per logical topic
  and partition, in the config center): a message acknowledged before — on any cluster, by
  any consumer of the subscription, before a restart or a switch — is acknowledged on the
  broker and skipped (counted in :attr:`Consumer.filtered`). A message redelivered while still
  handed out here (pulsar-lite may dispatch an entry twice) is skipped too.
* Acknowledgements are recorded by identity, stored, then sent to the broker
  (:mod:`hotstandby.adapters.pulsar.consumer.acknowledging`).
* Ledgers are written by every consumer of the subscription (a save merges; nobody owns a
  Shared subscription's partition), and each consumer merges what the others store.
* In a switch (the client's, see :mod:`hotstandby.adapters.pulsar.client.client`) the consumer
  stops handing out messages while the client's switch gate is closed, stores its ledgers and
  sends the pending acknowledgements to the old cluster, then subscribes on the new one where
  :mod:`hotstandby.adapters.pulsar.consumer.start_position` says; whatever is read again is
  filtered. Messages handed out and not acknowledged at the switch are delivered again there
  (at least once); one acknowledged after the switch counts by its identity, and a
  cumulative acknowledgement covers what its partition handed out before it, on either
  cluster. A message received just as a switch begins is kept: handed out if the switch
  fails, read again on the new cluster if it succeeds.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.adapters.pulsar.consumer.acceptance import Acceptance
from hotstandby.adapters.pulsar.consumer.acknowledging import Acknowledger
from hotstandby.adapters.pulsar.consumer.handed import HandedOut
from hotstandby.adapters.pulsar.consumer.start_position import start_after_copies
from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState
from hotstandby.adapters.pulsar.listener import MessageListener
from hotstandby.adapters.pulsar.topics import TopicSelection, full_topic, subscribe_pattern
from hotstandby.adapters.pulsar.waits import as_pulsar_waits, deadline_of, slice_ms
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigCenterUnavailable, ForeignPositionError
from hotstandby.logs import Seldom, get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Client

__all__ = ["Consumer"]

log = get_logger("hotstandby.pulsar.consumer")

_LISTENER_STOP_S = 5.0  # a listener call in progress when the consumer closes: how long close waits


class Consumer:
    """Drop-in replacement for :class:`pulsar.Consumer` (see the module doc)."""

    def __init__(self, client: Client, topics: TopicSelection, subscription_name: str, kwargs: dict[str, Any]) -> None:
        self._client = client
        self._topics = topics
        self._topic = topics.name  # one topic: its name, the logical topic of all its messages
        self._multi = topics.single is None  # a list or a pattern: a message's topic names its logical topic
        self._subscription = subscription_name
        self._kwargs = dict(kwargs)
        # Apache Pulsar then carries the acknowledged position across a switch (start_position).
        self._kwargs.setdefault("replicate_subscription_state_enabled", True)
        listener = self._kwargs.pop("message_listener", None)  # called by the SDK, not by pulsar-client
        self._state = client.subscription_state(topics, subscription_name)
        self._lock = self._state.lock
        # The client's gate: closed while a switch runs. Read under our lock: the switch takes
        # it after closing the gate (to store), so a message accepted here is stored then.
        self._gate = client.gate
        self._out = HandedOut()
        self._held: list[pulsar.Message] = []  # received while a switch ran (see _hold)
        self._closed = False
        self._seldom = Seldom(log)  # events that can happen per message
        partitions = self._load(client.inner, patiently=True)
        consumer_type = kwargs.get("consumer_type", pulsar.ConsumerType.Exclusive)
        self._shared = consumer_type in (pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared)
        # pulsar-client refuses a receive with a timeout when its queue holds nothing: such a
        # consumer waits in one call (a switch ends it by closing the consumer given up).
        self._zero_queue = kwargs.get("receiver_queue_size") == 0
        # Exclusive and Failover: one consumer reads a partition, in the broker's order, so an
        # acknowledged prefix can be sent to the broker as one cumulative acknowledgement.
        self._cumulative = consumer_type in (pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover)
        # An Exclusive subscription of a topic that is not partitioned has one consumer, which
        # receives every message in the broker's order: its acknowledged prefix says where to
        # start on the cluster the copies in it came from (see start_position.start_after_copies).
        self._track_origins = consumer_type == pulsar.ConsumerType.Exclusive and len(partitions) == 1
        self._acceptance = Acceptance(
            self._state, self._out, topics, track_origins=self._track_origins, cumulative=self._cumulative
        )
        self._acceptance.slot = self._single_slot(partitions)
        self._acks = Acknowledger(self._state, self._out, topics, cumulative=self._cumulative, shared=self._shared,
                                  current=lambda: self._inner, check_open=self._check_open,
                                  seldom=self._seldom)  # fmt: skip
        self._inner = self._subscribe(client.inner, client.spec)
        self._listener = None if listener is None else MessageListener(self, listener, self._receive)

    def _single_slot(self, partitions: list[str]) -> tuple[str, int] | None:
        """The slot every message comes from when the topic is not partitioned (else None: the
        message's topic names its partition)."""
        return (self._topic, 0) if len(partitions) == 1 else None

    def _load(self, client: pulsar.Client, *, patiently: bool) -> list[str]:
        """Merge what the subscription's consumers stored (``patiently``: waiting while etcd
        does not answer); returns one topic's partitions (none for several topics)."""
        topic = self._topics.single
        partitions: list[str] = [] if topic is None else client.get_topic_partitions(topic)
        load = self._state.load_all if topic is None else functools.partial(self._state.load, len(partitions))
        if patiently:
            self._client.follower.patiently(load, "subscribing")
        else:
            load()
        return partitions

    def _subscribe(
        self, client: pulsar.Client, spec: ClusterSpec, *, initial: pulsar.InitialPosition | None = None
    ) -> pulsar.Consumer:
        kwargs = dict(self._kwargs)
        if initial is not None:
            kwargs["initial_position"] = initial
        topics = self._topics
        if topics.pattern is not None:  # resolved on this cluster
            center = self._client.follower.center
            return subscribe_pattern(client, topics.pattern, self._subscription, kwargs, cluster=spec.name,
                                     registered=lambda: center.registered_topics(spec.name))  # fmt: skip
        return client.subscribe(topics.single or list(topics.listed), self._subscription, **kwargs)

    # -- receiving --------------------------------------------------------------------------

    @property
    def filtered(self) -> int:
        """Messages not handed out (by this client's consumers of the subscription): acknowledged
        before, or handed out already."""
        filtered: int = self._state.acks.filtered
        return filtered

    def topic(self) -> str:
        """The topic's full name; of a list or a pattern, pulsar-client's name for its consumer
        on the cluster in use."""
        return full_topic(self._topic) if not self._multi else str(self._inner.topic())

    def subscription_name(self) -> str:
        return self._subscription

    def consumer_name(self) -> str:
        """As :meth:`pulsar.Consumer.consumer_name`: the name on the cluster in use (given with
        ``consumer_name=``, the same on every cluster; else the broker's, new after a switch)."""
        return str(self._inner.consumer_name())

    def is_connected(self) -> bool:
        """As :meth:`pulsar.Consumer.is_connected`, for the cluster in use (False once closed)."""
        return bool(self._inner.is_connected())

    def get_last_message_id(self) -> Any:
        """As :meth:`pulsar.Consumer.get_last_message_id`: the last message id of the topic on
        the cluster in use (a message id names a message on one cluster only)."""
        return self._inner.get_last_message_id()

    def receive(self, timeout_millis: int | None = None) -> pulsar.Message:
        """As :meth:`pulsar.Consumer.receive`; raises ``pulsar.Timeout`` after ``timeout_millis``
        (None or negative: no limit), ``pulsar.Interrupted`` when a signal handler raises
        (Ctrl-C) while it waits. A consumer with a ``message_listener`` refuses, as with
        pulsar-client (``InvalidConfiguration``)."""
        if self._listener is not None:
            raise pulsar.InvalidConfiguration("Pulsar error: InvalidConfiguration")
        return as_pulsar_waits(lambda: self._receive(timeout_millis), timeout_millis)

    def _receive(self, timeout_millis: int | None) -> pulsar.Message:
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
                if not self._zero_queue:
                    msg = inner.receive(wait_ms)
                elif timeout_millis is None:
                    msg = inner.receive()
                else:
                    msg = inner.receive(timeout_millis)  # refused by pulsar-client, as without the SDK
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
        if self._listener is not None:
            raise pulsar.InvalidConfiguration("Pulsar error: InvalidConfiguration")
        return as_pulsar_waits(self._batch_receive)

    def pause_message_listener(self) -> None:
        """As :meth:`pulsar.Consumer.pause_message_listener` (``InvalidConfiguration`` without a
        listener); the pause holds across switches."""
        if self._listener is None:
            raise pulsar.InvalidConfiguration("Pulsar error: InvalidConfiguration")
        self._listener.pause()

    def resume_message_listener(self) -> None:
        """As :meth:`pulsar.Consumer.resume_message_listener`."""
        if self._listener is None:
            raise pulsar.InvalidConfiguration("Pulsar error: InvalidConfiguration")
        self._listener.resume()

    def _batch_receive(self) -> list[pulsar.Message]:
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
        """``msg`` or, when it is not to be handed out, None (lock held; ``acceptance``)."""
        return self._acceptance.accept(msg, self._inner)

    # -- acknowledging (the Acknowledger) ----------------------------------------------------

    def acknowledge(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.acknowledge`: stored in the ledger, then sent to the broker."""
        self._acks.acknowledge(message)

    def acknowledge_cumulative(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.acknowledge_cumulative`: what its partition handed out up to it."""
        self._acks.acknowledge_cumulative(message)

    def negative_acknowledge(self, message: pulsar.Message | pulsar.MessageId) -> None:
        """As :meth:`pulsar.Consumer.negative_acknowledge` (a message or its id): it comes again."""
        self._acks.negative_acknowledge(message)

    def redeliver_unacknowledged_messages(self) -> None:
        """As :meth:`pulsar.Consumer.redeliver_unacknowledged_messages`: what is handed out comes again."""
        self._acks.redeliver_unacknowledged_messages()

    def _check_open(self) -> None:
        if self._closed:
            raise pulsar.AlreadyClosed("Pulsar error: AlreadyClosed")

    def unsubscribe(self) -> None:
        with self._lock:
            self._check_open()
            self._inner.unsubscribe()

    def seek(self, messageid: pulsar.MessageId | int) -> None:
        """As :meth:`pulsar.Consumer.seek`, on the cluster in use: to a publish time (ms since
        the epoch; any cluster answers it), ``pulsar.MessageId.earliest`` / ``latest``, or a
        message id of that cluster. The id of a message handed out on a cluster the consumer
        has left raises :class:`hotstandby.errors.ForeignPositionError` (ids name messages on
        one cluster only: seek by publish time instead). Messages the subscription acknowledged
        stay acknowledged (the ack ledger skips them); those handed out and not acknowledged
        come again."""
        with self._lock:
            self._check_open()  # pulsar-client: NotConnected, once its connection is gone
            if hasattr(messageid, "ledger_id") and self._out.only_left(messageid):
                raise ForeignPositionError(
                    f"message id {messageid} names a message of a cluster this consumer left (now on "
                    f"{self._client.cluster!r}): seek by publish time instead"
                )
            self._inner.seek(messageid)
            self._acks.give_back()

    def abandon(self) -> None:
        """The client shuts down: closed at once; what was acknowledged is stored and sent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._listener is not None:
            self._listener.stop(0)
        self._client.release_subscription_state(self._state)

    def close(self) -> None:
        """Store the acknowledgements, send them, close (the client stops moving this consumer).
        While etcd is unreachable it waits up to the etcd timeout for it; acknowledgements it
        could not store stay with the subscription's other consumers of this client, or else
        are logged as not stored (those messages come again: at least once). A message listener
        is called no more once it returns (unless it is the listener that closes)."""
        if self._listener is not None:
            self._listener.stop(_LISTENER_STOP_S)
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

    def handed_count(self) -> int:
        """Messages handed out on the cluster in use and not acknowledged yet."""
        return len(self._out.current)

    @property
    def state(self) -> SubscriptionState:
        return self._state

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """Subscribe on the new cluster; the returned step puts it in place (the client resets
        the shared state first, once)."""
        partitions = self._load(client, patiently=False)  # what other processes stored
        new = self._subscribe(client, spec, initial=pulsar.InitialPosition.Earliest)
        if self._track_origins:
            origin = next(iter(self._state.acks.last_acked_origin.values()), None)
            new = start_after_copies(client, new, spec, topic=self._topic, origin=origin,
                                     route=self._client.follower.route,
                                     resubscribe=lambda: self._subscribe(client, spec))  # fmt: skip

        def commit() -> None:
            with self._lock:
                self._inner = new
                self._acceptance.slot = self._single_slot(partitions)
                self._held.clear()  # not acknowledged: they come again on the new cluster
                left = self._out.leave()  # acknowledged from now on by identity (_acknowledge_elsewhere)
            log.info("consumer.switched", topic=self._topic, subscription=self._subscription, source=source,
                     to=spec.name, unacknowledged=left)  # fmt: skip

        return commit
