"""One config-center connection and one route watcher per process and namespace.

Every failover-aware client needs the config center (reads, presence, ledgers) and a watch of
the routes. Clients of one process that name the same etcd and namespace share them: the
first one opens the connection (and starts the watcher when it follows its route), the last
one to close closes them. A :class:`ConfigCenter` passed in by the application is shared the
same way by the clients given it, and never closed here: whoever made it closes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.watcher import RouteChange, RouteWatcher
from hotstandby.settings import Settings

__all__ = ["SHARED_CENTERS", "CenterPool", "SharedCenter"]

Opener = Callable[[Settings], ConfigCenter]
Subscriber = Callable[[RouteChange], None]
Unsubscribe = Callable[[], None]


@dataclass(eq=False)
class _Entry:
    key: Hashable
    center: ConfigCenter
    owned: bool  # opened here: closed with the last user
    users: int = 0
    watching: int = 0
    watcher: RouteWatcher | None = None
    starting: threading.Lock = field(default_factory=threading.Lock)  # one start of the watcher at a time


class CenterPool:
    """The shared connections of a process (:data:`SHARED_CENTERS`); tests make their own
    with an ``opener`` (by default :meth:`ConfigCenter.open`)."""

    def __init__(self, opener: Opener | None = None) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._entries: dict[Hashable, _Entry] = {}

    def acquire(self, settings: Settings | None = None, *, center: ConfigCenter | None = None) -> SharedCenter:
        """A user's handle on the config center of ``settings`` (or on ``center``): opened by
        the first user, shared by the others until each :meth:`SharedCenter.close` d it."""
        settings = settings or Settings.resolve()
        key: Hashable = ("center", id(center)) if center is not None else ("settings", settings)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                if center is None:
                    opened = self._opener(settings) if self._opener is not None else ConfigCenter.open(settings)
                    entry = _Entry(key, opened, owned=True)
                else:
                    entry = _Entry(key, center, owned=False)
                self._entries[key] = entry
            entry.users += 1
        return SharedCenter(self, entry)

    def _watch(self, entry: _Entry, callback: Subscriber, timeout: float) -> tuple[RouteWatcher, Unsubscribe]:
        with entry.starting:
            with self._lock:
                watcher = entry.watcher
            if watcher is None:
                watcher = RouteWatcher(entry.center)
                unsubscribe = watcher.subscribe(callback)
                watcher.start(timeout)  # raises when etcd does not answer: nothing is kept
            else:
                unsubscribe = watcher.subscribe(callback)
            with self._lock:
                entry.watcher = watcher
                entry.watching += 1
            return watcher, unsubscribe

    def _unwatch(self, entry: _Entry, unsubscribe: Unsubscribe) -> None:
        unsubscribe()
        with self._lock:
            watcher = entry.watcher
            entry.watching -= 1
            if watcher is None or entry.watching > 0:
                return
            entry.watcher = None
        watcher.stop()

    def _hold(self, entry: _Entry) -> None:
        with self._lock:
            entry.users += 1

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            if entry.users > 0:
                return
            del self._entries[entry.key]
            watcher, entry.watcher = entry.watcher, None
        if watcher is not None:
            watcher.stop()
        if entry.owned:
            entry.center.close()


class SharedCenter:
    """One user's hold on a shared config center (and its route watcher)."""

    def __init__(self, pool: CenterPool, entry: _Entry) -> None:
        self._pool = pool
        self._entry = entry
        self._subscriptions: list[Unsubscribe] = []
        self._closed = False

    @property
    def center(self) -> ConfigCenter:
        return self._entry.center

    def share(self) -> SharedCenter:
        """Another hold on the same config center (not on the watcher), for work that may
        outlive this one's user: it keeps the connection open until it is closed too."""
        self._pool._hold(self._entry)
        return SharedCenter(self._pool, self._entry)

    def watch(self, callback: Subscriber, *, timeout: float = 10.0) -> RouteWatcher:
        """Subscribe ``callback`` to the shared route watcher, starting it (reading the routes
        for up to ``timeout`` s) when it does not run yet; until :meth:`close`."""
        watcher, unsubscribe = self._pool._watch(self._entry, callback, timeout)
        self._subscriptions.append(unsubscribe)
        return watcher

    def close(self) -> None:
        """Give the hold up (once): the last user's close stops the watcher and closes the
        connection it opened."""
        if self._closed:
            return
        self._closed = True
        for unsubscribe in self._subscriptions:
            self._pool._unwatch(self._entry, unsubscribe)
        self._pool._release(self._entry)


#: The process's shared config centers.
SHARED_CENTERS = CenterPool()
