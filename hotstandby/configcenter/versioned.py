"""Read-merge-write of one key without losing a concurrent update: the value is read with its
revision and written only if the key still has that revision (compare-and-put); a writer that
lost the race reads again and merges again."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hotstandby.configcenter.center import ConfigCenter
from hotstandby.errors import ConcurrentUpdateError

__all__ = [
    "Versioned",
    "create_value",
    "delete_keys",
    "put_value",
    "read_many",
    "read_prefix",
    "read_versioned",
    "update_versioned",
    "write_if_unchanged",
]


@dataclass(frozen=True)
class Versioned:
    """A key's value and the revision it was last written at (0: the key does not exist)."""

    key: str
    value: bytes | None
    revision: int


def read_versioned(center: ConfigCenter, key: str) -> Versioned:
    kv = center.store.get(key)
    return Versioned(key, None, 0) if kv is None else Versioned(key, kv.value, kv.mod_revision)


def read_many(center: ConfigCenter, keys: Sequence[str]) -> dict[str, Versioned]:
    """Several keys, read together (one round trip to etcd)."""
    found = center.store.get_many(keys)
    return {key: Versioned(key, None, 0) if kv is None else Versioned(key, kv.value, kv.mod_revision)
            for key, kv in found.items()}  # fmt: skip


def write_if_unchanged(
    center: ConfigCenter, expected: Mapping[str, int], values: Mapping[str, bytes]
) -> dict[str, int] | None:
    """Write ``values`` in one transaction if every key of ``expected`` still has that
    revision (0: absent); the revision each written key has now, or None (nothing written)."""
    return center.store.put_all_if_revisions(expected, values)


def update_versioned(
    center: ConfigCenter, key: str, change: Callable[[Versioned], bytes], *, attempts: int = 5
) -> None:
    """Write ``change(current)`` if nobody wrote ``key`` in between; read and try again up to
    ``attempts`` times, then :class:`ConcurrentUpdateError`. ``change`` may raise to give up."""
    for _ in range(attempts):
        current = read_versioned(center, key)
        if center.store.put_if_revision(key, change(current), current.revision):
            return
    raise ConcurrentUpdateError(f"{key}: changed {attempts} times while updating; try again")


def put_value(center: ConfigCenter, key: str, value: bytes) -> None:
    """Write ``value`` whatever is there (a key only one writer writes, or writes the same)."""
    center.store.put(key, value)


def read_prefix(center: ConfigCenter, prefix: str) -> list[Versioned]:
    """Every key under ``prefix``, at one revision."""
    kvs, _ = center.store.get_prefix(prefix)
    return [Versioned(kv.key, kv.value, kv.mod_revision) for kv in kvs]


def delete_keys(center: ConfigCenter, keys: list[str]) -> None:
    for key in keys:
        center.store.delete(key)


def create_value(center: ConfigCenter, key: str, value: bytes) -> Versioned:
    """Write ``value`` unless ``key`` exists; what the key holds afterwards (the first writer's
    value wins)."""
    if center.store.put_if_revision(key, value, 0):
        return read_versioned(center, key)
    current = read_versioned(center, key)
    if current.value is None:  # deleted in between: try once more
        center.store.put_if_revision(key, value, 0)
        current = read_versioned(center, key)
    return current
