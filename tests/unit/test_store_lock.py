"""StoreLock: one holder at a time, released by revoking its lease."""

from __future__ import annotations

from hotstandby.configcenter import MemoryStore
from hotstandby.configcenter.lock import StoreLock


def test_one_holder_at_a_time_and_release_lets_the_next_in() -> None:
    store = MemoryStore()
    first = StoreLock(store, "/ns/locks/x", owner="one")
    second = StoreLock(store, "/ns/locks/x", owner="two")
    assert first.acquire(timeout=1)
    assert not second.try_acquire()
    assert not second.acquire(timeout=0.1)
    kv = store.get("/ns/locks/x")
    assert kv is not None and kv.value == b"one"
    first.release()
    assert store.get("/ns/locks/x") is None
    with second:
        assert second.acquire(timeout=1)
    assert store.get("/ns/locks/x") is None


def test_other_names_do_not_contend() -> None:
    store = MemoryStore()
    assert StoreLock(store, "/ns/locks/a", owner="1").try_acquire()
    assert StoreLock(store, "/ns/locks/b", owner="2").try_acquire()
