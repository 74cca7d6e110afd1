"""Keys kept alive under an etcd lease: a process publishes where it is, and what it published
vanishes ``ttl_s`` after it stops keeping it (it died, or lost etcd for longer than that)."""

from __future__ import annotations

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.configcenter.store import KeyValue

__all__ = ["LeasedKey", "leased_values"]


class LeasedKey:
    """``key`` under a lease of ``ttl_s`` seconds, granted on the first write. Calls raise the
    store's errors (:class:`~hotstandby.errors.ConfigCenterError`); the caller retries."""

    def __init__(self, center: ConfigCenter, key: str, *, ttl_s: int) -> None:
        self._store = center.store
        self.key = key
        self._ttl_s = ttl_s
        self._lease = 0

    def write(self, value: bytes) -> None:
        if not self._lease:
            self._lease = self._store.grant_lease(self._ttl_s)
        self._store.put(self.key, value, lease=self._lease)

    def keep(self, value: bytes) -> None:
        """Refresh the lease; when it expired (and took the key with it), write ``value`` again
        under a new one."""
        if not self._lease or not self._store.refresh_lease(self._lease):
            self._lease = 0
            self.write(value)

    def release(self) -> None:
        """Revoke the lease now, deleting the key (nothing if it was never written)."""
        lease, self._lease = self._lease, 0
        if lease:
            self._store.revoke_lease(lease)


def leased_values(center: ConfigCenter, prefix: str) -> list[KeyValue]:
    """The keys published under ``prefix`` that are still alive, sorted by key."""
    kvs, _ = center.store.get_prefix(prefix)
    return kvs
