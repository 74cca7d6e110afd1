"""Route watcher: delivers valid route changes, in order, and survives etcd trouble.

* Resumes from the last revision it processed after the connection breaks, so a flip made
  while it was disconnected is delivered once, not missed and not repeated.
* After a compaction (history it needs is gone) it re-reads every route and delivers those
  whose epoch moved forward.
* Reconnects with exponential backoff and jitter (tenacity), interruptible by :meth:`stop`.
* Never delivers an invalid route — malformed JSON, an unknown cluster, clusters of mixed
  kinds, an epoch not greater than the one it has: it logs ``route.rejected`` and keeps the
  current value. A deleted route is logged (``route.deleted``) and its last value is kept:
  clients stay where they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import tenacity

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.keys import Keys
from hotstandby.configcenter.store import Event, WatchStream
from hotstandby.documents import Route, check_route, check_route_update
from hotstandby.errors import ConfigError, HotStandbyError, RevisionCompacted
from hotstandby.logs import get_logger

__all__ = ["RouteChange", "RouteWatcher"]

log = get_logger("hotstandby.configcenter.watcher")

_POLL_S = 0.25


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
        self._max_backoff = max_backoff
        self._lock = threading.Lock()
        self._routes: dict[str, Route] = {}
        self._subscribers: list[Subscriber] = []
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._revision = 0
        self._need_resync = False
        self._connections = 0
        #: Connections re-established after the first one.
        self.reconnects = 0
        self.resyncs = 0
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
        return self._revision

    def start(self, timeout: float = 10.0) -> RouteWatcher:
        """Read the current routes (retrying up to ``timeout`` s) and start watching."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(self._store.recoverable_errors),
            wait=self._backoff(),
            stop=tenacity.stop_after_delay(timeout),
            reraise=True,
        )
        retrying(self._resync, deliver=False)
        self._thread = threading.Thread(target=self._run, name="hotstandby-route-watcher", daemon=True)
        self._thread.start()
        log.info("watch.started", prefix=self._prefix, revision=self._revision)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; waits up to ``timeout`` s for the thread."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("watch.stop_timeout", timeout=timeout)

    def __enter__(self) -> RouteWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _sleep(self, seconds: float) -> None:
        self._stopped.wait(seconds)  # returns early when stop() is called

    def _backoff(self) -> tenacity.wait.wait_base:
        return tenacity.wait_exponential_jitter(multiplier=0.05, max=self._max_backoff, jitter=0.05)

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        stream: WatchStream | None = None
        try:
            while not self._stopped.is_set():
                if stream is None:
                    stream = self._connect()
                    if stream is None:
                        return
                try:
                    for event in stream.get(timeout=_POLL_S):
                        self._on_event(event)
                except RevisionCompacted as exc:
                    # etcd reports a compacted start revision on the stream, after creating it.
                    self._compacted(exc)
                    stream.cancel()
                    stream = None
                except self._store.recoverable_errors as exc:
                    log.warning("watch.disconnected", error=str(exc), resume_from=self._revision + 1)
                    stream.cancel()
                    stream = None
                except Exception as exc:  # a bug: log it, back off, resume from the last revision
                    log.exception("watch.failed", error=repr(exc), resume_from=self._revision + 1)
                    stream.cancel()
                    stream = None
                    self._stopped.wait(self._max_backoff)
        finally:
            if stream is not None:
                stream.cancel()
            log.info("watch.stopped", revision=self._revision)

    def _connect(self) -> WatchStream | None:
        """Open a stream from the next revision; re-read everything if it was compacted."""

        def attempt() -> WatchStream:
            if self._need_resync:
                self._resync(deliver=True)
                self._need_resync = False
            try:
                return self._store.watch_prefix(self._prefix, self._revision + 1)
            except RevisionCompacted as exc:
                self._compacted(exc)
                raise

        def before_sleep(state: tenacity.RetryCallState) -> None:
            log.info(
                "watch.reconnecting",
                attempt=state.attempt_number,
                error=str(state.outcome.exception()) if state.outcome else None,
            )

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type((*self._store.recoverable_errors, RevisionCompacted)),
            wait=self._backoff(),
            stop=tenacity.stop_when_event_set(self._stopped),
            sleep=self._sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            stream = retrying(attempt)
        except HotStandbyError:
            if self._stopped.is_set():
                return None
            raise
        if self._stopped.is_set():
            stream.cancel()
            return None
        self._connections += 1
        self.reconnects = self._connections - 1
        log.info("watch.connected", start_revision=self._revision + 1, reconnects=self.reconnects)
        return stream

    def _compacted(self, exc: RevisionCompacted) -> None:
        log.warning("watch.compacted", wanted=self._revision + 1, oldest=exc.compact_revision)
        self._need_resync = True

    # -- applying changes ------------------------------------------------------------------

    def _resync(self, *, deliver: bool) -> None:
        snap = self._center.snapshot()
        self.resyncs += int(deliver)
        for problem in snap.problems:
            if self._prefix in str(problem):
                self._reject("", problem, snap.revision)
        for route in snap.routes.values():
            self._offer(route, snap.revision, deliver=deliver)
        self._revision = snap.revision

    def _on_event(self, event: Event) -> None:
        (name,) = Keys.tail(event.key, self._prefix)
        if event.type == "delete":
            log.warning("route.deleted", route=name, revision=event.mod_revision, kept=self.current(name) is not None)
        else:
            try:
                route = Route.from_json(name, event.value, key=event.key)
                check_route(route, self._center.clusters(), key=event.key)
            except ConfigError as exc:
                self._reject(name, exc, event.mod_revision)
            else:
                self._offer(route, event.mod_revision, deliver=True)
        # Only now is the event done: a failure above re-reads it after reconnecting.
        self._revision = event.mod_revision

    def _offer(self, route: Route, revision: int, *, deliver: bool) -> None:
        previous = self.current(route.name)
        if previous == route:
            return
        try:
            check_route_update(previous, route, key=self._center.keys.route(route.name))
        except ConfigError as exc:
            self._reject(route.name, exc, revision)
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

    def _reject(self, name: str, exc: Exception, revision: int) -> None:
        self.rejected += 1
        log.warning("route.rejected", route=name or None, revision=revision, reason=str(exc))
