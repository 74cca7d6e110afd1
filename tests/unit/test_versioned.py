"""Read-merge-write without losing a concurrent update (configcenter.versioned)."""

from __future__ import annotations

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.versioned import Versioned, read_versioned, update_versioned
from hotstandby.errors import ConcurrentUpdateError


def test_a_write_that_lost_the_race_merges_again_and_keeps_both_updates() -> None:
    center = ConfigCenter(MemoryStore(), "/ns")
    seen: list[bytes | None] = []

    def add_b(current: Versioned) -> bytes:
        seen.append(current.value)
        if len(seen) == 1:  # another writer gets in between our read and our write
            center.store.put("/ns/k", (current.value or b"") + b"a")
        return (current.value or b"") + b"b"

    update_versioned(center, "/ns/k", add_b)
    assert seen == [None, b"a"]
    assert read_versioned(center, "/ns/k").value == b"ab"


def test_a_key_that_keeps_changing_gives_up_after_the_attempts() -> None:
    center = ConfigCenter(MemoryStore(), "/ns")

    def always_raced(current: Versioned) -> bytes:
        center.store.put("/ns/k", b"other")
        return b"mine"

    with pytest.raises(ConcurrentUpdateError, match="changed 3 times"):
        update_versioned(center, "/ns/k", always_raced, attempts=3)
    assert read_versioned(center, "/ns/k").value == b"other"
