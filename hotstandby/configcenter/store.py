"""The key-value store interface under the config center.

Small on purpose: what etcd v3 offers and the config center needs — revisioned reads, a
compare-and-put on the mod revision, a watch that starts at a given revision, compaction.
An implementation raises only hotstandby errors and lists in ``recoverable_errors`` those a
caller may retry (after a backoff); everything else is final.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from hotstandby.errors import ConfigCenterUnavailable

__all__ = ["Event", "KVStore", "KeyValue", "WatchStream"]


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key with its value and the revision that last modified it."""

    key: str
    value: bytes
    mod_revision: int


@dataclass(frozen=True, slots=True)
class Event:
    """A change seen by a watch. ``value`` is empty for a delete."""

    type: Literal["put", "delete"]
    key: str
    value: bytes
    mod_revision: int


class WatchStream(abc.ABC):
    """Events of one watched prefix, in revision order."""

    @abc.abstractmethod
    def get(self, timeout: float) -> list[Event]:
        """Next batch of events; empty after ``timeout`` seconds without any.

        Raises :class:`~hotstandby.errors.RevisionCompacted` when the start revision is no
        longer available and :class:`~hotstandby.errors.ConfigCenterUnavailable` when the
        connection broke; the stream is unusable after either.
        """

    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop watching; a :meth:`get` waiting meanwhile returns at once, empty. Safe to call
        more than once, from any thread."""


class KVStore(abc.ABC):
    """Revisioned key-value store (etcd v3 semantics)."""

    #: Errors after which the same call may succeed later.
    recoverable_errors: ClassVar[tuple[type[BaseException], ...]] = (ConfigCenterUnavailable,)
    #: The user the store authenticated as (None: no authentication).
    identity: str | None = None

    @abc.abstractmethod
    def get(self, key: str) -> KeyValue | None:
        """The key's current value, or None."""

    @abc.abstractmethod
    def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """All keys under ``prefix`` sorted by key, and the store revision of that read."""

    @abc.abstractmethod
    def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        """Write unconditionally (attached to ``lease`` if not 0); returns the new revision."""

    @abc.abstractmethod
    def put_if_revision(self, key: str, value: bytes, mod_revision: int, *, lease: int = 0) -> bool:
        """Write only if the key's mod revision is still ``mod_revision`` (0: key absent),
        attached to ``lease`` if not 0."""

    def get_many(self, keys: Sequence[str]) -> dict[str, KeyValue | None]:
        """Several keys' current values (None: absent), read at one revision where the store
        can (etcd: one transaction)."""
        return {key: self.get(key) for key in keys}

    @abc.abstractmethod
    def put_all_if_revisions(self, expected: Mapping[str, int], puts: Mapping[str, bytes]) -> dict[str, int] | None:
        """One transaction: if every key of ``expected`` still has that mod revision (0: key
        absent), write ``puts``; the mod revision each written key has now, or None (and
        nothing written) when a revision differed."""

    @abc.abstractmethod
    def commit_if_revisions(
        self, expected: Mapping[str, int], puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        """One transaction: if every key of ``expected`` still has that mod revision (0: key
        absent), write ``puts`` and delete ``deletes``; False (and nothing written) otherwise."""

    @abc.abstractmethod
    def delete(self, key: str) -> bool:
        """Delete the key; True if it existed."""

    @abc.abstractmethod
    def watch_prefix(self, prefix: str, start_revision: int) -> WatchStream:
        """Watch every change under ``prefix`` from ``start_revision`` on (inclusive)."""

    @abc.abstractmethod
    def grant_lease(self, ttl_s: int) -> int:
        """A lease of ``ttl_s`` seconds; keys put with it vanish when it expires or is revoked."""

    @abc.abstractmethod
    def refresh_lease(self, lease_id: int) -> bool:
        """Keep the lease alive for another TTL; False if it already expired."""

    @abc.abstractmethod
    def revoke_lease(self, lease_id: int) -> None:
        """End the lease now, deleting its keys. Unknown leases are ignored."""

    @abc.abstractmethod
    def compact(self, revision: int) -> None:
        """Forget history before ``revision`` (watches from earlier revisions fail)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> KVStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
