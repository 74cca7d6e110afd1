"""``hotstandby.adapters.pulsar.Client``: pulsar.Client over a route.

One ``pulsar.Client`` serves the route's active cluster. Producers and consumers made by
:meth:`Client.create_producer` and :meth:`Client.subscribe` belong to it; when the route
flips, the client moves all of them in one switch:

1. *draining* — producers let the old cluster acknowledge what it has (when it answers, up to
   ``hotstandby.drain.timeout.ms``); consumers stop handing out messages and store their
   acknowledgements (the ledgers);
2. a ``pulsar.Client`` for the new cluster is made, and every producer and consumer gets its
   counterpart there — if any of them cannot be made, the switch fails as a whole, the old
   cluster stays in use and the switch is retried;
3. *switching* — the counterparts replace the old ones; producers re-send what the old
   cluster had not acknowledged and their replay window; the old client is closed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.errors import ConfigError
from hotstandby.failover.client_options import PREFIX, ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower
from hotstandby.failover.switching import SwitchState
from hotstandby.logs import get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.consumer import Consumer
    from hotstandby.adapters.pulsar.producer import Producer
    from hotstandby.adapters.pulsar.reader import Reader
    from hotstandby.adapters.pulsar.subscription import SubscriptionState

__all__ = ["Client", "close_quietly"]

log = get_logger("hotstandby.pulsar.client")

_CLOSE_TIMEOUT_S = 10.0


class Client(RouteClient):
    """Drop-in replacement for :class:`pulsar.Client` that follows ``route`` (module doc).

    ``etcd``, ``namespace`` and ``client_id`` locate the config center and name the client;
    ``options`` takes further ``hotstandby.*`` settings (docs/configuration.md); everything
    else is passed to ``pulsar.Client`` as is, except the service URL, which is the active
    cluster's.
    """

    def __init__(
        self,
        route: str,
        *,
        etcd: str | None = None,
        namespace: str | None = None,
        client_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        config: dict[str, Any] = dict(options or {})
        config[f"{PREFIX}route"] = route
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
        self._lock = threading.RLock()
        self._producers: list[Producer] = []
        self._consumers: list[Consumer] = []
        self._readers: list[Reader] = []
        self._subscriptions: dict[tuple[str, str], SubscriptionState] = {}
        self._closed = False
        self._follower = RouteFollower(self.options, "pulsar", role="client")
        self._inner: pulsar.Client = self._follow(self._connect, self._perform)

    def _connect(self, spec: ClusterSpec) -> pulsar.Client:
        kwargs = {**spec.client_config("admin"), **self._client_kwargs}
        return pulsar.Client(spec.url, **kwargs)

    # -- the pulsar.Client surface ---------------------------------------------------------

    def create_producer(self, topic: str, **kwargs: Any) -> Producer:
        """As :meth:`pulsar.Client.create_producer` (``message_router`` is the SDK's own)."""
        from hotstandby.adapters.pulsar.producer import Producer

        with self._lock:
            self._check_open()
            producer = Producer(self, topic, kwargs)
            self._producers.append(producer)
            return producer

    def subscribe(self, topic: str, subscription_name: str, **kwargs: Any) -> Consumer:
        """As :meth:`pulsar.Client.subscribe`, for one topic (partitioned or not)."""
        from hotstandby.adapters.pulsar.consumer import Consumer

        with self._lock:
            self._check_open()
            consumer = Consumer(self, topic, subscription_name, kwargs)
            self._consumers.append(consumer)
            return consumer

    def create_reader(self, topic: str, start_message_id: pulsar.MessageId, **kwargs: Any) -> Reader:
        """As :meth:`pulsar.Client.create_reader`; after a switch the reader goes on where it
        was (by the identities of the messages it returned)."""
        from hotstandby.adapters.pulsar.reader import Reader

        with self._lock:
            self._check_open()
            reader = Reader(self, topic, start_message_id, kwargs)
            self._readers.append(reader)
            return reader

    def get_topic_partitions(self, topic: str) -> list[str]:
        with self._lock:
            self._check_open()
            return list(self._inner.get_topic_partitions(topic))

    def close(self) -> None:
        """Close every producer (flushing) and consumer made here, then the connection."""
        with self._lock:
            if self._closed:
                return
            producers, consumers, readers = list(self._producers), list(self._consumers), list(self._readers)
        for producer in producers:
            producer.close()
        receivers: list[Consumer | Reader] = [*consumers, *readers]
        for member in receivers:
            member.close()
        self._follower.close()
        with self._lock:
            self._closed = True
            self._inner.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- for producers and consumers -------------------------------------------------------

    @property
    def inner(self) -> pulsar.Client:
        return self._inner

    @property
    def spec(self) -> ClusterSpec:
        return self._spec

    @property
    def follower(self) -> RouteFollower:
        return self._follower

    def retire(self, member: Producer | Consumer | Reader, inner: Any) -> None:
        """A producer, consumer or reader is closed: close its pulsar counterpart; it no longer moves."""
        close_quietly(inner)
        with self._lock:
            self._producers = [p for p in self._producers if p is not member]
            self._consumers = [c for c in self._consumers if c is not member]
            self._readers = [r for r in self._readers if r is not member]

    def subscription_state(self, topic: str, subscription: str) -> SubscriptionState:
        """The state this client's consumers of ``subscription`` on ``topic`` share."""
        from hotstandby.adapters.pulsar.subscription import SubscriptionState

        with self._lock:
            state = self._subscriptions.get((topic, subscription))
            if state is None:
                state = SubscriptionState(self._follower.center, topic, subscription, self.options.client_id)
                self._subscriptions[(topic, subscription)] = state
            state.users += 1
            return state

    def release_subscription_state(self, state: SubscriptionState) -> None:
        with self._lock:
            state.users -= 1
            if state.users > 0:
                return
            self._subscriptions.pop((state.topic, state.subscription), None)
        state.close()

    def _check_open(self) -> None:
        if self._closed:
            raise pulsar.AlreadyClosed("Client has been closed")

    # -- switching -------------------------------------------------------------------------

    def _perform(self, current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
        spec = self._follower.cluster(target.active)
        with self._lock:
            producers, consumers, readers = list(self._producers), list(self._consumers), list(self._readers)
        set_state(SwitchState.DRAINING)
        for producer in producers:
            producer.drain(self._spec)
        new: pulsar.Client | None = None
        prepared: list[Callable[[], None]] = []
        receivers: list[Consumer | Reader] = [*consumers, *readers]
        try:
            # Storing the ledgers (settle) and reading the peers' presence need etcd: if it
            # fails here, the consumers go on with the old cluster until the next attempt.
            for receiver in receivers:
                receiver.settle()
            if consumers:
                # Published: our acknowledgements are stored. Other clients of the route (another
                # process with a consumer of the same subscription) store theirs before we hand
                # out anything on the new cluster.
                set_state(SwitchState.SWITCHING)
                behind = self._follower.await_peers(target, self.options.drain_timeout_ms / 1000)
                if behind:
                    log.warning("client.peers_behind", clients=behind, epoch=target.epoch)
            new = self._connect(spec)
            for member in [*producers, *receivers]:
                prepared.append(member.prepare(new, spec, current.active))
        except BaseException:
            for receiver in receivers:
                receiver.resume()
            if new is not None:
                close_quietly(new)
            raise
        set_state(SwitchState.SWITCHING)
        states = list({id(c.state): c.state for c in consumers}.values())
        with self._lock, contextlib.ExitStack() as held:
            # No acknowledgement between a reset and the consumers' commit: it would reach
            # neither the old cluster's bookkeeping (reset) nor the identities left behind.
            for state in states:
                held.enter_context(state.lock)
            old = self._inner
            self._inner, self._spec = new, spec
            for state in states:
                state.reset()  # what was handed out belongs to the old cluster
            for commit in prepared:
                commit()
        closer = threading.Thread(target=close_quietly, args=(old,), daemon=True, name="hotstandby-pulsar-close")
        closer.start()
        log.info("client.switched", client=self.options.client_id, source=current.active, to=target.active,
                 epoch=target.epoch, producers=len(producers), consumers=len(consumers))  # fmt: skip


def close_quietly(closeable: Any) -> None:
    """Close what we give up (its cluster may be dead: pulsar-client bounds the wait)."""
    try:
        closeable.close()
    except pulsar.PulsarException as exc:
        log.info("client.close_failed", what=type(closeable).__name__, error=str(exc))
