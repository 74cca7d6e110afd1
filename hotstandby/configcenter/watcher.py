"""Route watcher: delivers valid route changes, in order, and survives etcd trouble.

* Runs on :class:`~hotstandby.configcenter.prefix_watch.PrefixWatch`: resumes from the last
  revision it processed after the connection breaks, so a flip made while it was
  disconnected is delivered once, not missed and not repeated; after a compaction (history
  it needs is gone) it re-reads every route and delivers those whose epoch moved forward;
  reconnects with exponential backoff and jitter, interruptible by :meth:`stop`.
* Never delivers an invalid route — any malformed value (wrong types, deep nesting, huge,
  not UTF-8), an unknown cluster, clusters of mixed kinds, an epoch not greater than the one
  it has or below the route's epoch floor: it logs ``route.rejected`` once for that revision,
  keeps the current value and goes on with the next revision. A deleted route is logged
  (``route.deleted``) and its last value is kept: clients stay where they are.
* An invalid cluster document is logged once per revision (``cluster.rejected``) and left
  out; it blocks only routes that name that cluster (those are rejected with the reason, the
  clients stay where they are), never the others.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Route, check_floor, check_route, check_route_update
from hotstandby.configcenter.prefix_watch import PrefixWatch
from hotstandby.configcenter.store import Event, KeyValue
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.logs import get_logger

__all__ = ["RouteChange", "RouteWatcher"]

log = get_logger("hotstandby.configcenter.watcher")


@dataclass(frozen=True, slots=True)
class RouteChange:
    """A route moved to a new epoch. ``previous`` is None for a route seen for the first time."""

    route: Route
    previous: Route | None
    revision: int


Subscriber = Callable[[RouteChange], None]


class RouteWatcher:
    """Watches ``<ns>/routes/`` and calls subscribers with each accepted change.

    Subscribers run on the watcher's thread, one change at a time, in revision order; an
    exception in one is logged (``route.subscriber_failed``) and does not stop the others.
    """

    def __init__(self, center: ConfigCenter, *, max_backoff: float = 2.0) -> None:
        self._center = center
        self._store = center.store
        self._prefix = center.keys.routes
        self._lock = threading.Lock()
        self._routes: dict[str, Route] = {}
        self._subscribers: list[Subscriber] = []
        # key -> mod revision of the invalid values already logged (each is logged once).
        self._reported: dict[str, int] = {}
        self._watch = PrefixWatch(
            self._store, self._prefix, self._resync, self._on_event, name="route-watcher", max_backoff=max_backoff
        )
        self.rejected = 0

    # -- public ----------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def current(self, name: str) -> Route | None:
        """The last accepted value of route ``name``."""
        with self._lock:
            return self._routes.get(name)

    @property
    def revision(self) -> int:
        """The last config-center revision fully processed."""
        return self._watch.revision

    @property
    def reconnects(self) -> int:
        """Connections re-established after the first one."""
        return self._watch.reconnects

    @property
    def resyncs(self) -> int:
        """Reads of every route after a compaction."""
        return self._watch.resyncs

    def start(self, timeout: float = 10.0) -> RouteWatcher:
        """Read the current routes (retrying up to ``timeout`` s) and start watching."""
        self._watch.start(timeout)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; waits up to ``timeout`` s for the thread."""
        self._watch.stop(timeout)

    def __enter__(self) -> RouteWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- applying changes ------------------------------------------------------------------

    def _resync(self, kvs: list[KeyValue], initial: bool) -> None:
        deliver = not initial  # the first read is what the subscribers start from
        clusters, invalid = self._clusters()
        floors, _ = self._store.get_prefix(self._center.keys.epochs)
        by_name = {kv.key[len(self._center.keys.epochs) :]: kv for kv in floors}
        for kv in kvs:
            floor = functools.partial(by_name.get, kv.key[len(self._prefix) :])
            self._consider(kv, clusters, invalid, floor, deliver=deliver)

    def _on_event(self, event: Event) -> None:
        kv = KeyValue(event.key, event.value, event.mod_revision)
        if event.type == "delete":
            name = kv.key[len(self._prefix) :]
            log.warning("route.deleted", route=name, revision=event.mod_revision, kept=self.current(name) is not None)
        else:
            clusters, invalid = self._clusters()
            floor = self._center.keys.epochs + kv.key[len(self._prefix) :]
            self._consider(kv, clusters, invalid, lambda: self._store.get(floor), deliver=True)

    def _consider(
        self,
        kv: KeyValue,
        clusters: dict[str, ClusterSpec],
        invalid: dict[str, str],
        read_floor: Callable[[], KeyValue | None],
        *,
        deliver: bool,
    ) -> None:
        """Validate one stored route value and offer it; an invalid one is rejected.

        The epoch floor is checked for a route this watcher has no value of yet (a client
        starting, a route it never had; a deleted route's last value is kept). Later values
        must exceed the one it has, which is at least the floor of their time — reading the
        floor now instead would refuse flips already superseded when their event arrives."""
        try:
            route = self._center._parse_route(kv)
            floor_kv = read_floor() if self.current(route.name) is None else None
            if floor_kv is not None:
                try:
                    floor: Route | None = self._center._parse_floor(floor_kv)
                except ValidationError:
                    floor = None  # unreadable floor: only the client-side fence applies
                check_floor(route, floor, key=kv.key)
            check_route(route, clusters, key=kv.key, invalid=invalid)
        except self._store.recoverable_errors:
            raise
        except ConfigError as exc:
            self._reject(kv, exc)
        except Exception as exc:  # a value no check foresaw must not stop the watch either
            log.exception("route.check_failed", key=kv.key, error=repr(exc))
            self._reject(kv, exc)
        else:
            self._offer(route, kv.mod_revision, deliver=deliver, key=kv.key)

    def _clusters(self) -> tuple[dict[str, ClusterSpec], dict[str, str]]:
        """The valid cluster definitions and, by name, why the others are invalid."""
        kvs, _ = self._store.get_prefix(self._center.keys.clusters)
        valid: dict[str, ClusterSpec] = {}
        invalid: dict[str, str] = {}
        for kv in kvs:
            try:
                spec = self._center._parse_cluster(kv)
            except ValidationError as exc:
                invalid[kv.key[len(self._center.keys.clusters) :]] = exc.problem
                if self._reported.get(kv.key) != kv.mod_revision:
                    self._reported[kv.key] = kv.mod_revision
                    log.warning("cluster.rejected", key=kv.key, revision=kv.mod_revision, reason=exc.problem)
                continue
            valid[spec.name] = spec
        return valid, invalid

    def _offer(self, route: Route, revision: int, *, deliver: bool, key: str) -> None:
        previous = self.current(route.name)
        if previous == route:
            return
        try:
            check_route_update(previous, route, key=key)
        except ConfigError as exc:
            self._reject(KeyValue(key, b"", revision), exc)
            return
        with self._lock:
            self._routes[route.name] = route
            subscribers = list(self._subscribers) if deliver else []
        log.info(
            "route.changed",
            route=route.name,
            active=route.active,
            epoch=route.epoch,
            previous=previous.active if previous else None,
            revision=revision,
        )
        change = RouteChange(route, previous, revision)
        for callback in subscribers:
            try:
                callback(change)
            except Exception as exc:  # a subscriber's bug must not stop the watch
                log.exception("route.subscriber_failed", route=route.name, error=repr(exc))

    def _reject(self, kv: KeyValue, exc: Exception) -> None:
        """Log an invalid route value once per revision (a resync meets it again)."""
        if self._reported.get(kv.key) == kv.mod_revision:
            return
        self._reported[kv.key] = kv.mod_revision
        self.rejected += 1
        reason = exc.problem if isinstance(exc, ValidationError) else str(exc)
        log.warning(
            "route.rejected",
            route=kv.key[len(self._prefix) :],
            key=kv.key,
            revision=kv.mod_revision,
            reason=reason[:500],
        )
