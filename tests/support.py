"""Helpers shared by unit and integration tests."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from hotstandby.configcenter import Event, KeyValue, KVStore, MemoryStore, RouteChange, WatchStream
from hotstandby.errors import ConfigCenterUnavailable

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str) -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


class _Collect(logging.Handler):
    def __init__(self, into: list[dict[str, Any]]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):
            self.into.append({**record.msg, "log_level": record.levelname.lower(), "logger": record.name})


@contextlib.contextmanager
def capture_logs() -> Iterator[list[dict[str, Any]]]:
    """The SDK's events while the block runs, as dicts (``event``, fields, ``log_level``,
    ``logger``), through a handler on the ``hotstandby`` stdlib logger."""
    events: list[dict[str, Any]] = []
    handler = _Collect(events)
    logger = logging.getLogger("hotstandby")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class ChangeQueue:
    """A route-watcher subscriber that queues changes for the test to take."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[float, RouteChange]] = queue.Queue()

    def __call__(self, change: RouteChange) -> None:
        self.queue.put((time.monotonic(), change))

    def take(self, timeout: float = 10.0) -> RouteChange:
        return self.take_timed(timeout)[1]

    def take_timed(self, timeout: float = 10.0) -> tuple[float, RouteChange]:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no route change delivered within {timeout} s") from None

    def assert_empty(self, within: float = 0.3) -> None:
        """Nothing more is delivered during ``within`` s (a bounded wait for an absence)."""
        try:
            extra = self.queue.get(timeout=within)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected extra route change: {extra[1]}")


class _GatedStream(WatchStream):
    def __init__(self, inner: WatchStream) -> None:
        self.inner = inner
        self.severed = False

    def get(self, timeout: float) -> list[Event]:
        if not self.severed:
            events = self.inner.get(timeout)
            if not self.severed:  # events in flight when severed are lost with the connection
                return events
        raise ConfigCenterUnavailable("test: stream severed")

    def cancel(self) -> None:
        self.inner.cancel()


class GatedStore(KVStore):
    """Delegates to a real store; :meth:`sever` breaks open watches and refuses new ones
    until :meth:`reopen`, so a test can change things while a watcher is cut off."""

    def __init__(self, inner: KVStore) -> None:
        self.inner = inner
        self.recoverable_errors = inner.recoverable_errors
        self._lock = threading.Lock()
        self._open = threading.Event()
        self._open.set()
        self._streams: list[_GatedStream] = []
        self.watch_attempts = 0

    def sever(self) -> None:
        with self._lock:
            self._open.clear()
            for s in self._streams:
                s.severed = True
                s.inner.cancel()

    def reopen(self) -> None:
        self._open.set()

    def watch_prefix(self, prefix: str, start_revision: int) -> WatchStream:
        self.watch_attempts += 1
        if not self._open.is_set():
            raise ConfigCenterUnavailable("test: gate closed")
        stream = _GatedStream(self.inner.watch_prefix(prefix, start_revision))
        with self._lock:
            self._streams.append(stream)
            if not self._open.is_set():  # severed while the watch was being created
                stream.severed = True
                stream.inner.cancel()
        return stream

    def get(self, key: str) -> KeyValue | None:
        return self.inner.get(key)

    def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        return self.inner.get_prefix(prefix)

    def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        return self.inner.put(key, value, lease=lease)

    def grant_lease(self, ttl_s: int) -> int:
        return self.inner.grant_lease(ttl_s)

    def refresh_lease(self, lease_id: int) -> bool:
        return self.inner.refresh_lease(lease_id)

    def revoke_lease(self, lease_id: int) -> None:
        self.inner.revoke_lease(lease_id)

    def put_if_revision(self, key: str, value: bytes, mod_revision: int, *, lease: int = 0) -> bool:
        return self.inner.put_if_revision(key, value, mod_revision, lease=lease)

    def get_many(self, keys: Sequence[str]) -> dict[str, KeyValue | None]:
        return self.inner.get_many(keys)

    def put_all_if_revisions(self, expected: Mapping[str, int], puts: Mapping[str, bytes]) -> dict[str, int] | None:
        return self.inner.put_all_if_revisions(expected, puts)

    def commit_if_revisions(
        self, expected: Mapping[str, int], puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        return self.inner.commit_if_revisions(expected, puts, deletes)

    def delete(self, key: str) -> bool:
        return self.inner.delete(key)

    def compact(self, revision: int) -> None:
        self.inner.compact(revision)

    def close(self) -> None:
        self.inner.close()


class ManualClock:
    """A clock for ``polling``'s waits whose time passes only when the code under test sleeps."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@contextlib.contextmanager
def two_memory_clusters(route: str, topic: str, partitions: int) -> Iterator[Any]:
    """An in-memory world (``hotstandby.adapters.memory``) with clusters ``mem-a`` and
    ``mem-b``, ``topic`` on both and ``route`` on ``mem-a``; its clients' watches stop with it."""
    from hotstandby.adapters.memory.world import World

    world = World(("mem-a", "mem-b"))
    world.create_topic(topic, partitions)
    world.create_route(route, "mem-a")
    try:
        yield world
    finally:
        world.store.disconnect()  # wakes the clients' watches: their threads stop at once
        world.close()


class CountingStore(GatedStore):
    """Counts the round trips to the store by kind."""

    def __init__(self) -> None:
        super().__init__(MemoryStore())
        self.calls: Counter[str] = Counter()
        self.largest_write = 0

    def get(self, key: str) -> KeyValue | None:
        self.calls["read"] += 1
        return super().get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, KeyValue | None]:
        self.calls["read"] += 1
        return super().get_many(keys)

    def put_if_revision(self, key: str, value: bytes, mod_revision: int, *, lease: int = 0) -> bool:
        self.calls["write"] += 1
        return super().put_if_revision(key, value, mod_revision, lease=lease)

    def put_all_if_revisions(self, expected: Mapping[str, int], puts: Mapping[str, bytes]) -> dict[str, int] | None:
        self.calls["write"] += 1
        self.largest_write = max(self.largest_write, len(puts))
        return super().put_all_if_revisions(expected, puts)
