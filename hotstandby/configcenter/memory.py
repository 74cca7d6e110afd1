"""In-memory :class:`KVStore` with etcd's revision semantics, for unit tests.

Besides the store operations it can simulate what etcd does to clients: a broken connection
(:meth:`MemoryStore.disconnect` / :meth:`MemoryStore.reconnect`) and compaction.
"""

from __future__ import annotations

import bisect
import itertools
import queue
import threading
import time
from collections.abc import Mapping, Sequence

from hotstandby.configcenter.store import Event, KeyValue, KVStore, WatchStream
from hotstandby.errors import ConfigCenterUnavailable, RevisionCompacted

__all__ = ["MemoryStore"]

_BROKEN = object()
_CANCELLED = object()


class _MemoryWatch(WatchStream):
    def __init__(self, store: MemoryStore, prefix: str) -> None:
        self._store = store
        self.prefix = prefix
        self._queue: queue.Queue[list[Event] | object] = queue.Queue()
        self._broken = False

    def push(self, item: list[Event] | object) -> None:
        self._queue.put(item)

    def get(self, timeout: float) -> list[Event]:
        if self._broken:
            raise ConfigCenterUnavailable("memory store: watch stream is broken")
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        if item is _BROKEN:
            self._broken = True
            raise ConfigCenterUnavailable("memory store: connection lost")
        if item is _CANCELLED:
            return []
        assert isinstance(item, list)
        return item

    def cancel(self) -> None:
        self._store._unregister(self)
        self._queue.put(_CANCELLED)  # wakes a get() waiting meanwhile


class MemoryStore(KVStore):
    """Thread-safe in-memory store. Revisions start at 1 and grow by one per change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, KeyValue] = {}
        self._history: list[Event] = []
        self._revision = 1
        self._compacted = 0
        self._watches: list[_MemoryWatch] = []
        self._connected = True
        self._leases: dict[int, tuple[float, float, set[str]]] = {}  # id -> (ttl, expires, keys)
        self._lease_ids = itertools.count(1)

    # -- fault injection -------------------------------------------------------------------

    def disconnect(self) -> None:
        """Break every open watch and fail every call until :meth:`reconnect`."""
        with self._lock:
            self._connected = False
            watches, self._watches = self._watches, []
        for w in watches:
            w.push(_BROKEN)

    def reconnect(self) -> None:
        with self._lock:
            self._connected = True

    def _check(self) -> None:
        # Caller holds the lock. Expired leases take their keys with them, as in etcd.
        if not self._connected:
            raise ConfigCenterUnavailable("memory store: disconnected")
        now = time.monotonic()
        for lease_id in [i for i, (_, expires, _) in self._leases.items() if expires <= now]:
            self._drop_lease(lease_id)

    def _drop_lease(self, lease_id: int) -> None:
        _, _, keys = self._leases.pop(lease_id)
        for key in sorted(keys):
            if key in self._data:
                del self._data[key]
                self._revision += 1
                self._commit(Event("delete", key, b"", self._revision))

    # -- KVStore ---------------------------------------------------------------------------

    def get(self, key: str) -> KeyValue | None:
        with self._lock:
            self._check()
            return self._data.get(key)

    def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        with self._lock:
            self._check()
            kvs = [kv for k, kv in sorted(self._data.items()) if k.startswith(prefix)]
            return kvs, self._revision

    def _commit(self, event: Event) -> None:
        # Caller holds the lock.
        self._history.append(event)
        for w in self._watches:
            if event.key.startswith(w.prefix):
                w.push([event])

    def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        with self._lock:
            self._check()
            return self._put(key, value, lease)

    def _put(self, key: str, value: bytes, lease: int) -> int:
        # Caller holds the lock.
        for _, _, keys in self._leases.values():
            keys.discard(key)
        if lease:
            if lease not in self._leases:
                raise ConfigCenterUnavailable(f"memory store: lease {lease} not found")
            self._leases[lease][2].add(key)
        self._revision += 1
        self._data[key] = KeyValue(key, bytes(value), self._revision)
        self._commit(Event("put", key, bytes(value), self._revision))
        return self._revision

    def put_if_revision(self, key: str, value: bytes, mod_revision: int, *, lease: int = 0) -> bool:
        with self._lock:
            self._check()
            current = self._data.get(key)
            if (current.mod_revision if current else 0) != mod_revision:
                return False
            self._put(key, value, lease)
            return True

    def _unchanged(self, expected: Mapping[str, int]) -> bool:
        # Caller holds the lock.
        return all((kv.mod_revision if (kv := self._data.get(key)) else 0) == rev for key, rev in expected.items())

    def put_all_if_revisions(self, expected: Mapping[str, int], puts: Mapping[str, bytes]) -> dict[str, int] | None:
        with self._lock:
            self._check()
            if not self._unchanged(expected):
                return None
            return {key: self._put(key, value, 0) for key, value in puts.items()}

    def commit_if_revisions(
        self, expected: Mapping[str, int], puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        with self._lock:
            self._check()
            if not self._unchanged(expected):
                return False
            # etcd gives every operation of a transaction the same revision; one each is
            # close enough for the watchers of this test store.
            for key, value in puts.items():
                self._put(key, value, 0)
            for key in deletes:
                self._delete(key)
            return True

    def _delete(self, key: str) -> None:
        # Caller holds the lock.
        if key in self._data:
            del self._data[key]
            self._revision += 1
            self._commit(Event("delete", key, b"", self._revision))

    def delete(self, key: str) -> bool:
        with self._lock:
            self._check()
            if key not in self._data:
                return False
            self._delete(key)
            return True

    def watch_prefix(self, prefix: str, start_revision: int) -> WatchStream:
        with self._lock:
            self._check()
            if start_revision <= self._compacted:
                raise RevisionCompacted(self._compacted + 1)
            watch = _MemoryWatch(self, prefix)
            revisions = [e.mod_revision for e in self._history]
            backlog = [
                e for e in self._history[bisect.bisect_left(revisions, start_revision) :] if e.key.startswith(prefix)
            ]
            if backlog:
                watch.push(backlog)
            self._watches.append(watch)
            return watch

    def _unregister(self, watch: _MemoryWatch) -> None:
        with self._lock:
            if watch in self._watches:
                self._watches.remove(watch)

    def grant_lease(self, ttl_s: int) -> int:
        with self._lock:
            self._check()
            lease_id = next(self._lease_ids)
            self._leases[lease_id] = (float(ttl_s), time.monotonic() + ttl_s, set())
            return lease_id

    def refresh_lease(self, lease_id: int) -> bool:
        with self._lock:
            self._check()
            if lease_id not in self._leases:
                return False
            ttl, _, keys = self._leases[lease_id]
            self._leases[lease_id] = (ttl, time.monotonic() + ttl, keys)
            return True

    def revoke_lease(self, lease_id: int) -> None:
        with self._lock:
            self._check()
            if lease_id in self._leases:
                self._drop_lease(lease_id)

    def compact(self, revision: int) -> None:
        with self._lock:
            self._check()
            revision = min(revision, self._revision)
            self._compacted = max(self._compacted, revision - 1)
            self._history = [e for e in self._history if e.mod_revision > self._compacted]

    def close(self) -> None:
        with self._lock:
            watches, self._watches = self._watches, []
        for w in watches:
            w.push(_BROKEN)
