"""A mutual exclusion in the config center: a key created under a lease.

Whoever creates ``<ns>/locks/<name>`` holds the lock; releasing deletes the key by revoking
the lease, and a holder that dies releases it when the lease expires (``ttl_s``). Acquiring
waits at most ``timeout`` seconds.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.polling import SYSTEM_CLOCK, Clock, wait_until
from hotstandby.configcenter.store import KVStore
from hotstandby.errors import ConfigCenterError

__all__ = ["StoreLock", "center_lock"]


class StoreLock:
    def __init__(self, store: KVStore, key: str, *, owner: str, ttl_s: int = 15, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock
        self._key = key
        self._owner = owner.encode()
        self._ttl_s = ttl_s
        self._lease = 0

    def try_acquire(self) -> bool:
        """One attempt: True if the lock is now held by us."""
        if not self._lease:
            self._lease = self._store.grant_lease(self._ttl_s)
        return self._store.put_if_revision(self._key, self._owner, 0, lease=self._lease)

    def acquire(self, timeout: float) -> bool:
        """True once held; False when ``timeout`` ran out first."""
        return wait_until(self.try_acquire, timeout, first=0.05, most=0.2, clock=self._clock)

    def release(self) -> None:
        self._revoke()

    def _revoke(self) -> None:
        if self._lease:
            lease, self._lease = self._lease, 0
            with contextlib.suppress(ConfigCenterError):  # it expires on its own after the TTL
                self._store.revoke_lease(lease)

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def center_lock(center: ConfigCenter, name: str, *, owner: str, ttl_s: int = 15) -> StoreLock:
    """The lock ``<ns>/locks/<name>`` of ``center``."""
    return StoreLock(center.store, center.keys.lock(name), owner=owner, ttl_s=ttl_s)
