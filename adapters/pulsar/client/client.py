"""``hotstandby.adapters.pulsar.Client``: pulsar.Client over a route.

One ``pulsar.Client`` serves the route's active cluster. Producers, consumers, readers and
table views made by :meth:`Client.create_producer`, :meth:`Client.subscribe`,
:meth:`Client.create_reader` and :meth:`Client.create_table_view` belong to it; when the route
flips, the client moves all of them
in one switch — it is the tree's one participant in the core's switch protocol
(:mod:`hotstandby.failover.switch_protocol`), with one switch gate that holds its consumers'
and readers' reads (and the making of new members) while the switch runs:

1. *drain* — producers let the old cluster acknowledge what it has (when it answers, up to
   ``hotstandby.drain.timeout.ms``);
2. *store* — the gate closes: consumers stop handing out messages and store their
   acknowledgements (the ledgers); with consumers, the client then waits (bounded) for the
   route's other clients to store theirs;
3. *connect* — a ``pulsar.Client`` for the new cluster is made, and every producer, consumer,
   reader and table view gets its counterpart there — if any cannot be made, the switch fails as
   a whole, the old cluster stays in use and the switch is retried;
4. *move* — the counterparts replace the old ones; producers re-send what the old cluster had
   not acknowledged and their replay window; the gate opens; the old client is closed in the
   background.

``on_switch`` (or ``hotstandby.on_switch`` in ``options``) is given each switch event of the
client (docs/observability.md): its re-sent count sums its producers', its filtered count its
consumers'.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import pulsar

from hotstandby.adapters.pulsar.client.error_messages import with_messages
from hotstandby.adapters.pulsar.client.settings import client_kwargs
from hotstandby.adapters.pulsar.client.state import ClientState
from hotstandby.adapters.pulsar.client.switch import ClientSwitch, close_quietly
from hotstandby.adapters.pulsar.topics import TopicSelection
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError
from hotstandby.failover.client_options import PREFIX, ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switch_events import ClientCounts, OnSwitch
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.logs import get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.consumer.consumer import Consumer
    from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState
    from hotstandby.adapters.pulsar.producer.producer import Producer
    from hotstandby.adapters.pulsar.reader.reader import Reader
    from hotstandby.adapters.pulsar.reader.table_view import TableView

    Member: TypeAlias = Producer | Consumer | Reader | TableView

__all__ = ["Client", "close_quietly"]

log = get_logger("hotstandby.pulsar.client")

_BYTES = pulsar.schema.BytesSchema()  # pulsar-client's default schema

# How long making a producer, consumer or reader waits for a switch to finish (it would be
# made on the cluster being left); a switch holds the gate for the drain timeout at most,
# plus the time pulsar-client takes to connect.
_MEMBER_WAIT_S = 60.0


class Client(RouteClient):
    """Drop-in replacement for :class:`pulsar.Client` that follows ``route`` (module doc).

    ``etcd``, ``namespace`` and ``client_id`` locate the config center and name the client;
    ``options`` takes further ``hotstandby.*`` settings (docs/configuration.md); everything
    else is passed to ``pulsar.Client`` as is, except the service URL, which is the active
    cluster's. The active cluster's definition adds its ``client`` settings, which these
    keywords replace, and its credentials (``auth_plugin``, ``auth_params``), which win over
    an ``authentication`` keyword: that one serves clusters whose definitions name none
    (:mod:`hotstandby.adapters.pulsar.client.settings`). ``center`` (a :class:`ConfigCenter`,
    left open on close) and ``ledger_store`` replace the ones the client would open itself
    (tests, another store). ``on_switch`` is called with each
    :class:`~hotstandby.failover.switch_events.SwitchEvent` (docs/observability.md).
    """

    def __init__(
        self,
        route: str,
        *,
        etcd: str | None = None,
        namespace: str | None = None,
        client_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        center: ConfigCenter | None = None,
        ledger_store: LedgerStore | None = None,
        on_switch: OnSwitch | None = None,
        **client_kwargs: Any,
    ) -> None:
        config: dict[str, Any] = dict(options or {})
        config[f"{PREFIX}route"] = route
        if on_switch is not None:
            config[f"{PREFIX}on_switch"] = on_switch
        for key, value in (("etcd", etcd), ("namespace", namespace), ("client.id", client_id)):
            if value is not None:
                config[f"{PREFIX}{key}"] = value
        if "service_url" in client_kwargs:
            raise ConfigError(f"service_url must not be set: the cluster comes from route {route!r}")
        self.options, rest = ClientOptions.split(config, role="pulsar")
        if rest:
            raise ConfigError(
                f"options takes hotstandby.* settings only, got {sorted(rest)}; pass the rest as keywords"
            )
        self._client_kwargs = client_kwargs
        self._s = ClientState()
        self._lock = self._s.lock
        self._gate = SwitchGate(self._lock)
        self._subscriptions: dict[tuple[Hashable, str], SubscriptionState] = {}
        self._closed = False
        self._retired = ClientCounts()  # what closed producers re-sent, closed consumers filtered
        self._follower = RouteFollower(self.options, "pulsar", role="client", center=center)
        self._ledger_store = ledger_store if ledger_store is not None else LedgerStore(self._follower.center)
        self._switch = ClientSwitch(self.options, self._s, self._connect)
        # The follower's threads reach the switch through a weak proxy, and the client's counts
        # through a weak method: a client the application drops without close() is collected
        # (and its switch with it), and then stops following (_forget).
        counts = weakref.WeakMethod(self._counts)
        participant = cast("ClientSwitch", weakref.proxy(self._switch))
        self._join(self._connect_first, participant, self._gate, lambda: _counts_of(counts))
        self._forget = weakref.finalize(self, _forget, self._follower, self._subscriptions)

    @property
    def _spec(self) -> ClusterSpec:  # RouteClient's cluster in use
        return self._s.spec

    @_spec.setter
    def _spec(self, spec: ClusterSpec) -> None:
        self._s.spec = spec

    def _connect(self, spec: ClusterSpec) -> pulsar.Client:
        kwargs = client_kwargs(spec, self._client_kwargs)
        return with_messages(pulsar.Client(spec.url, **kwargs), kwargs.get("operation_timeout_seconds"))

    def _connect_first(self, spec: ClusterSpec) -> pulsar.Client:
        self._s.inner = self._connect(spec)  # before following: a switch may start at once
        return self._s.inner

    # -- the pulsar.Client surface ---------------------------------------------------------

    def create_producer(self, topic: str, **kwargs: Any) -> Producer:
        """As :meth:`pulsar.Client.create_producer` (``message_router`` is the SDK's own; of the
        ``message_routing_mode`` values, ``CustomPartition`` is refused)."""
        from hotstandby.adapters.pulsar.producer.producer import Producer

        with self._lock:
            self._check_open()
            self._wait_no_switch()
            producer = Producer(self, topic, kwargs)
            self._s.producers.append(producer)
            return producer

    def subscribe(self, topic: str | list[str] | re.Pattern[str], subscription_name: str, **kwargs: Any) -> Consumer:
        """As :meth:`pulsar.Client.subscribe`: to a topic (partitioned or not), a list of topics
        or a pattern (``re.compile(...)``), which each cluster resolves (docs/pulsar-api.md)."""
        from hotstandby.adapters.pulsar.consumer.consumer import Consumer

        topics = TopicSelection.of(topic)
        with self._lock:
            self._check_open()
            self._wait_no_switch()
            consumer = Consumer(self, topics, subscription_name, kwargs)
            self._s.consumers.append(consumer)
            return consumer

    def create_reader(self, topic: str, start_message_id: pulsar.MessageId, **kwargs: Any) -> Reader:
        """As :meth:`pulsar.Client.create_reader`; after a switch the reader goes on where it
        was (by the identities of the messages it returned). A ``reader_listener`` is called on
        a thread of the reader's own."""
        from hotstandby.adapters.pulsar.reader.reader import Reader

        with self._lock:
            self._check_open()
            self._wait_no_switch()
            reader = Reader(self, topic, start_message_id, kwargs)
            self._s.readers.append(reader)
            return reader

    def get_topic_partitions(self, topic: str) -> list[str]:
        """As :meth:`pulsar.Client.get_topic_partitions`, on the cluster in use."""
        with self._lock:
            self._check_open()
            return list(self._s.inner.get_topic_partitions(topic))

    def get_service_info(self) -> pulsar.ServiceInfo:
        """As :meth:`pulsar.Client.get_service_info`: the cluster in use (it changes with a switch)."""
        with self._lock:
            self._check_open()
            return self._s.inner.get_service_info()

    def create_table_view(
        self, topic: str, subscription_name: str | None = None, schema: pulsar.schema.Schema = _BYTES
    ) -> TableView:
        """As :meth:`pulsar.Client.create_table_view`: the table view of the cluster in use,
        made anew on the new cluster in a switch (:mod:`hotstandby.adapters.pulsar.reader.table_view`)."""
        from hotstandby.adapters.pulsar.reader.table_view import TableView

        with self._lock:
            self._check_open()
            self._wait_no_switch()
            view = TableView(self, topic, subscription_name, schema)
            self._s.views.append(view)
            return view

    def shutdown(self) -> None:
        """As :meth:`pulsar.Client.shutdown`: stop at once. Producers do not flush (what is
        pending fails); consumers store and send what was acknowledged, no more."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            members: list[Member] = [*self._s.producers, *self._s.consumers, *self._s.readers, *self._s.views]
        self._follower.close()
        self._forget.detach()
        for member in members:
            member.abandon()
        self._s.inner.shutdown()

    def close(self) -> None:
        """Close every producer (flushing) and consumer made here, then the connection."""
        with self._lock:
            if self._closed:
                return
            producers, consumers, readers = list(self._s.producers), list(self._s.consumers), list(self._s.readers)
            views = list(self._s.views)
        for producer in producers:
            producer.close()
        receivers: list[Consumer | Reader | TableView] = [*consumers, *readers, *views]
        for member in receivers:
            member.close()
        self._follower.close()
        self._forget.detach()
        with self._lock:
            self._closed = True
            self._s.inner.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- for producers and consumers -------------------------------------------------------

    @property
    def inner(self) -> pulsar.Client:
        return self._s.inner

    @property
    def spec(self) -> ClusterSpec:
        return self._spec

    @property
    def follower(self) -> RouteFollower:
        return self._follower

    @property
    def gate(self) -> SwitchGate:
        """Closed while a switch runs: consumers and readers hand nothing out then."""
        return self._gate

    def retire(self, member: Member, inner: Any) -> None:
        """A producer, consumer, reader or table view is closed: close its pulsar counterpart; it
        no longer moves."""
        close_quietly(inner)
        with self._lock:
            if member in self._s.producers:
                resent = int(getattr(member, "resent", 0))
                self._retired = ClientCounts(self._retired.resent + resent, self._retired.filtered)
            self._s.producers = [p for p in self._s.producers if p is not member]
            self._s.consumers = [c for c in self._s.consumers if c is not member]
            self._s.readers = [r for r in self._s.readers if r is not member]
            self._s.views = [v for v in self._s.views if v is not member]

    def subscription_state(self, topic: str | TopicSelection, subscription: str) -> SubscriptionState:
        """The state this client's consumers of ``subscription`` on ``topic`` (or the same
        topics) share."""
        from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState

        topics = topic if isinstance(topic, TopicSelection) else TopicSelection.of(topic)
        with self._lock:
            state = self._subscriptions.get((topics.key, subscription))
            if state is None:
                state = SubscriptionState(
                    self._follower.center, topics, subscription, self.options.client_id, store=self._ledger_store
                )
                self._subscriptions[(topics.key, subscription)] = state
            state.users += 1
            return state

    def release_subscription_state(self, state: SubscriptionState) -> None:
        with self._lock:
            state.users -= 1
            if state.users > 0:
                return
            self._subscriptions.pop((state.topics.key, state.subscription), None)
            self._retired = ClientCounts(self._retired.resent, self._retired.filtered + state.acks.filtered)
        state.close()

    def _counts(self) -> ClientCounts:
        """Records re-sent by this client's producers and filtered by its consumers, so far
        (read without the lock: a copy of each list; a count read mid-change is read again)."""
        retired, producers, states = self._retired, list(self._s.producers), list(self._subscriptions.values())
        return ClientCounts(
            resent=retired.resent + sum(p.resent for p in producers),
            filtered=retired.filtered + sum(s.acks.filtered for s in states),
        )

    def _check_open(self) -> None:
        if self._closed:
            raise pulsar.AlreadyClosed("Pulsar error: AlreadyClosed")

    def _wait_no_switch(self) -> None:
        """(Lock held.) A member made during a switch would be made on the cluster left."""
        if not self._gate.wait_open(_MEMBER_WAIT_S):
            raise pulsar.Timeout(f"a switch of route {self.options.route!r} did not end within {_MEMBER_WAIT_S:g} s")


def _forget(follower: RouteFollower, subscriptions: dict[tuple[Hashable, str], SubscriptionState]) -> None:
    """A client dropped without close() was collected: stop following its route and storing its
    subscriptions' acknowledgements (its pulsar.Client goes with it)."""
    log.info("client.collected_unclosed", route=follower.options.route, client=follower.options.client_id)
    for state in list(subscriptions.values()):
        state.close()
    follower.close()


def _counts_of(method: weakref.WeakMethod[Callable[[], ClientCounts]]) -> ClientCounts:
    """A client's counts for its switch events; none once it was collected."""
    counts = method()
    return counts() if counts is not None else ClientCounts()
