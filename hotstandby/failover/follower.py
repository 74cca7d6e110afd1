"""What every failover-aware client does with its route: read it, check it, watch it.

:class:`RouteFollower` takes the config center (the process's shared connection for the
client's settings, or one passed in) and the process's shared route watcher, takes the route
from it (the first client's start of the watcher reads the routes; the others read nothing) and
reads the definition of its active cluster (refusing a cluster of the wrong kind), then — once
the client has connected — hands each accepted change of the route to a
:class:`~hotstandby.failover.switching.Switcher`, which runs the switch protocol
(:meth:`RouteFollower.join`). One follower serves a client object tree (a Kafka producer or
consumer, a Pulsar client with all its producers, consumers and readers).

It is also where a client's switches are reported: each one as
:class:`~hotstandby.failover.switch_events.SwitchEvent` to ``hotstandby.on_switch`` and to the
metrics (:mod:`hotstandby.failover.switch_events`), and the cluster and epoch the client uses
in the ``hotstandby_client_*`` gauges next to its presence document.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from hotstandby.configcenter import ConfigCenter, RouteChange, RouteWatcher, polling
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.configcenter.polling import SYSTEM_CLOCK, Clock, wait_until
from hotstandby.configcenter.sharing import SHARED_CENTERS, CenterPool, SharedCenter
from hotstandby.errors import ConfigCenterUnavailable, ConfigError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.presence import Presence, list_clients
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_events import ClientCounts, SwitchEvent, SwitchEvents, SwitchPhase
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchParticipant, SwitchPlan, run_switch
from hotstandby.failover.switching import Perform, Switcher, SwitchState
from hotstandby.logs import get_logger
from hotstandby.metrics.instruments import CLIENT_CLUSTER, CLIENT_EPOCH, FILTERED
from hotstandby.metrics.registry import Followed

__all__ = ["RouteClient", "RouteFollower", "wait_slices"]

log = get_logger("hotstandby.client")

T = TypeVar("T")

_PROBE_TIMEOUT_S = 2.0  # per broker of the target cluster, before each switch attempt


class RouteFollower:
    """Follows ``options.route`` for one client object tree (see the module docs).

    ``center``: a config center to use instead of the process's shared connection for
    ``options.settings`` (not closed here); ``clock``: what the waits for etcd and for peers
    run on; ``centers``: where shared connections come from (tests)."""

    def __init__(
        self,
        options: ClientOptions,
        kind: str,
        *,
        role: str = "client",
        labels: dict[str, str] | None = None,
        center: ConfigCenter | None = None,
        clock: Clock = SYSTEM_CLOCK,
        centers: CenterPool | None = None,
    ) -> None:
        self.options = options
        self.kind = kind
        self.role = role
        self.labels = dict(labels or {})  # published with the presence (a consumer's group)
        self._clock = clock
        self._rejected = 0  # the newest epoch refused by the allow-list
        self.switcher: Switcher | None = None  # until start(), route changes are not acted on
        self.presence: Presence | None = None
        self.events = SwitchEvents(options.client_id, role, options.on_switch)
        self._followed: Followed | None = None  # the client's filtered count, in the metrics
        self._shared = (centers or SHARED_CENTERS).acquire(options.settings, center=center)
        self.center = self._shared.center
        try:
            # The process's route watcher (its first client starts it) holds every route read
            # and checked: a client that joins a running one only reads its cluster.
            # One read per attempt: patiently() retries, on the follower's clock.
            self._watcher: RouteWatcher = self.patiently(
                lambda: self._shared.watch(self._on_change, timeout=0.0), "starting the route watch"
            )
            self.initial_route: Route = self._newest_route(self._watcher.current(options.route))
            if not options.allows(self.initial_route.active):
                raise ConfigError(f"route {options.route!r} is on {self.initial_route.active!r}, which is not in "
                                  f"hotstandby.clusters.allowed ({', '.join(sorted(options.allowed_clusters))})")  # fmt: skip
            self.initial_cluster: ClusterSpec = self.patiently(
                lambda: self.cluster(self.initial_route.active), "reading the cluster"
            )
        except BaseException:
            self._shared.close()
            raise

    def _newest_route(self, watched: Route | None) -> Route:
        """The route to start on: what etcd has when it is newer than the watcher's value.
        A watch event reaches the process a moment after the write, and a client started
        in between (created right after a flip) must not join the cluster being left."""
        name = self.options.route
        if watched is None:  # not watched (unknown, or invalid): read it to raise why
            return self.patiently(lambda: self.center.route(name), "reading the route")
        try:
            if self.center.stored_route(name).epoch <= watched.epoch:
                return watched
            return self.center.route(name)
        except (ConfigCenterUnavailable, ConfigError) as exc:
            # The watcher delivers (or rejects) the newer value in its turn.
            log.warning("client.route_unread", client=self.options.client_id, route=name,
                        epoch=watched.epoch, error=str(exc))  # fmt: skip
            return watched

    def hold_center(self) -> SharedCenter:
        """Another hold on the follower's config center, for work that may go on after the
        client closed (the connection stays open until that hold is closed too)."""
        return self._shared.share()

    def patiently(self, call: Callable[[], T], what: str) -> T:
        """``call()``, tried again while etcd is unreachable, for up to the etcd timeout
        (``hotstandby.etcd.timeout.ms``): what creating a client or a consumer needs from etcd.
        Then :class:`ConfigCenterUnavailable` naming the endpoints."""
        settings = self.options.settings
        logged: list[bool] = []

        def attempt() -> T:
            try:
                return call()
            except ConfigCenterUnavailable as exc:
                if not logged:
                    log.warning("client.etcd_unavailable", client=self.options.client_id, doing=what,
                                error=str(exc), wait_s=settings.etcd_timeout)  # fmt: skip
                    logged.append(True)
                raise

        try:
            return polling.patiently(attempt, settings.etcd_timeout, clock=self._clock)
        except ConfigCenterUnavailable as exc:
            endpoints = ",".join(str(e) for e in settings.etcd)
            raise ConfigCenterUnavailable(
                f"{what}: etcd at {endpoints} did not answer within {settings.etcd_timeout:g} s ({exc})"
            ) from exc

    def cluster(self, name: str) -> ClusterSpec:
        """A cluster of this route, checked to be of the client's kind."""
        spec = self.center.cluster(name)
        if spec.kind != self.kind:
            raise ConfigError(
                f"route {self.options.route!r}: cluster {name!r} is {spec.kind}, this client needs {self.kind}"
            )
        return spec

    def target_answers(self, target: Route) -> str | None:
        """None when a broker of ``target``'s active cluster answers the protocol's handshake,
        else what went wrong: the switcher does not leave the cluster in use for one that
        does not answer."""
        result = probe_cluster(self.cluster(target.active), timeout=_PROBE_TIMEOUT_S)
        return None if result.ok else result.detail

    def plan(self, current: Route, target: Route, source: ClusterSpec) -> SwitchPlan:
        """Everything a switch attempt reads from the config center, read once."""
        return SwitchPlan(
            current=current,
            target=target,
            source=source,
            destination=self.cluster(target.active),
            links=self.center.links(),
            drain_timeout_s=self.options.drain_timeout_ms / 1000,
        )

    def join(
        self,
        participant: SwitchParticipant,
        gate: SwitchGate,
        source: Callable[[], ClusterSpec],
        *,
        since: Route | None = None,
        counts: Callable[[], ClientCounts] | None = None,
    ) -> None:
        """Follow the route from now on, moving ``participant`` through the switch protocol
        (``source()``: the cluster it uses now). ``since``: the route as the participant last
        followed it, when that is not the route read now (a query restarted from a checkpoint
        taken at an older epoch): the current route is then a switch to run. ``counts``: the
        client's running totals (records re-sent, filtered), for switch events and metrics."""
        if counts is not None:
            self.events.counts = counts
            self._followed = FILTERED.follow(lambda: counts().filtered, route=self.options.route, role=self.role)

        def perform(current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
            plan = self.plan(current, target, source())
            run_switch(participant, gate, plan, set_state, self._wait_peers)

        self.start(perform, since=since)

    def _wait_peers(self, target: Route, timeout: float, labels: Mapping[str, str]) -> list[str]:
        return self.await_peers(target, timeout, **labels)

    def start(self, perform: Perform, *, since: Route | None = None) -> None:
        """Follow the route from now on: changes run ``perform`` on the switcher's thread
        (``since``: see :meth:`join`)."""
        self.switcher = Switcher(
            self.options.client_id,
            since or self.initial_route,
            perform,
            answers=self.target_answers,
            on_event=self.events.emit,
        )
        self.presence = Presence(self.center, self.options.route, self.options.client_id, self.role)
        self.switcher.listen(self._publish)
        self._publish()
        # A flip since the route was read (changes before the switcher existed were not acted on).
        current = self._watcher.current(self.options.route)
        if current is not None:
            self._on_change(RouteChange(current, None, self._watcher.revision))
        log.info("client.started", client=self.options.client_id, route=self.options.route,
                 cluster=self.initial_route.active, epoch=self.initial_route.epoch)  # fmt: skip

    def _publish(self) -> None:
        assert self.switcher is not None and self.presence is not None
        last = self.switcher.history[-1] if self.switcher.history else None
        route = self.switcher.route
        names = {"route": self.options.route, "client": self.options.client_id, "role": self.role}
        CLIENT_CLUSTER.remove_matching(route=self.options.route, client=self.options.client_id)
        CLIENT_CLUSTER.set(1, cluster=route.active, **names)
        CLIENT_EPOCH.set(route.epoch, **names)
        self.presence.publish(
            **self.labels,
            cluster=route.active,
            epoch=route.epoch,
            state=self.switcher.state.value,
            switches=len(self.switcher.history),
            last_switch_ms=round(last.duration_s * 1000, 1) if last else None,
            problem=self.switcher.problem,  # why a switch under way has not completed
        )

    def _on_change(self, change: RouteChange) -> None:
        route = change.route
        if route.name != self.options.route or self.switcher is None:
            return
        if not self.options.allows(route.active):
            if route.epoch > self._rejected:  # once per epoch
                self._rejected = route.epoch
                log.error("route.rejected", client=self.options.client_id, route=route.name, to=route.active,
                          epoch=route.epoch, reason="not in hotstandby.clusters.allowed",
                          allowed=sorted(self.options.allowed_clusters))  # fmt: skip
                current = self.switcher.route
                self.events.emit(SwitchEvent(
                    phase=SwitchPhase.REJECTED, route=route.name, client_id=self.options.client_id, role=self.role,
                    from_cluster=current.active, to_cluster=route.active, from_epoch=current.epoch,
                    to_epoch=route.epoch, error="not in hotstandby.clusters.allowed",
                ))  # fmt: skip
            return
        self.switcher.offer(change)

    @property
    def route(self) -> Route:
        return self.switcher.route if self.switcher else self.initial_route

    def await_peers(self, target: Route, timeout: float, **labels: str) -> list[str]:
        """Wait until every other live client of this route with ``labels`` has left the epoch
        before ``target`` (its presence shows ``target``'s epoch or the ``switching`` state).
        Returns the clients still behind when ``timeout`` ran out (empty when all moved)."""
        behind: list[str] = []

        def all_moved() -> bool:
            behind[:] = [
                str(doc.get("client"))
                for doc in list_clients(self.center, self.options.route)
                if doc.get("client") != self.options.client_id
                and all(doc.get(k) == v for k, v in labels.items())
                and int(doc.get("epoch") or 0) < target.epoch
                and doc.get("state") != "switching"
            ]
            return not behind

        wait_until(all_moved, timeout, first=0.02, most=0.1, clock=self._clock)
        return behind

    def close(self) -> None:
        """Stop following; the last client of the shared connection closes it."""
        if self.switcher is not None:
            self.switcher.close()
        self.events.close()
        if self._followed is not None:
            self._followed.close()
        if self.switcher is not None:
            CLIENT_CLUSTER.remove_matching(route=self.options.route, client=self.options.client_id)
            CLIENT_EPOCH.remove(route=self.options.route, client=self.options.client_id, role=self.role)
        if self.presence is not None:
            self.presence.close()
        self._shared.close()


def wait_slices(timeout: float | None) -> Iterator[float]:
    """Short waits (at most 0.1 s) adding up to ``timeout`` (None or negative: no limit), so a
    client blocked in a wait lets a switch swap its connection in between."""
    deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
    while True:
        left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
        yield max(left, 0.0)
        if deadline is not None and time.monotonic() >= deadline:
            return


C = TypeVar("C")


class RouteClient:
    """What the drop-in facades share: a follower, the cluster in use, the start sequence."""

    _follower: RouteFollower
    _spec: ClusterSpec

    def _join(
        self, connect: Callable[[ClusterSpec], C], participant: SwitchParticipant, gate: SwitchGate,
        counts: Callable[[], ClientCounts] | None = None,
    ) -> C:  # fmt: skip
        """Connect to the route's active cluster, then follow the route through the switch
        protocol (``participant`` keeps :attr:`_spec` the cluster it uses; ``counts``: see
        :meth:`RouteFollower.join`); closes all on failure. The follower's threads hold the
        client weakly through the cluster in use (a client the application drops can be
        collected when ``participant`` and ``counts`` do not hold it either)."""
        ref = weakref.ref(self)

        def source() -> ClusterSpec:
            client = ref()
            if client is None:
                raise ReferenceError("the client was collected")
            return client._spec

        try:
            self._spec = self._follower.initial_cluster
            inner = connect(self._spec)
            self._follower.join(participant, gate, source, counts=counts)
            return inner
        except BaseException:
            self._follower.close()
            raise

    @property
    def cluster(self) -> str:
        """The cluster the client uses now."""
        return self._spec.name

    @property
    def route(self) -> Route:
        return self._follower.route

    @property
    def switch_state(self) -> SwitchState:
        """ACTIVE, or DRAINING/SWITCHING while the client moves to another cluster."""
        switcher = self._follower.switcher
        return switcher.state if switcher else SwitchState.ACTIVE
