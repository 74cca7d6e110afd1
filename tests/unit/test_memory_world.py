"""The in-memory clusters: replication driven by the test, kills, groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hotstandby.adapters.memory.cluster import BrokerUnavailable, Clock, CommitRefused, MemoryCluster
from hotstandby.adapters.memory.world import World, progress_of

TP = ("t", 0)


@pytest.fixture
def world() -> Iterator[World]:
    w = World(("a", "b"), clock=Clock(1_000_000), lag_ms=100)
    w.create_topic("t", 1)
    yield w
    w.close()


def test_replicate_copies_at_most_n_per_link_keeping_headers_and_never_back(world: World) -> None:
    a, b = world.clusters["a"], world.clusters["b"]
    for i in range(5):
        a.append(TP, None, f"v{i}".encode(), (("hs-id", bytes([i])),), 1000 + i)
    assert world.replicate(2) == 2
    assert [r.value for r in b.records(TP)] == [b"v0", b"v1"]
    assert b.records(TP)[1].headers == (("hs-id", b"\x01"),) and b.records(TP)[1].timestamp_ms == 1001
    assert world.replicate() == 3
    assert world.replicate() == 0, "copies are not copied back"
    assert len(a.records(TP)) == 5
    assert progress_of(b, "a")[TP].offset == 4


def test_tick_copies_only_what_waited_the_lag(world: World) -> None:
    a, b = world.clusters["a"], world.clusters["b"]
    a.append(TP, None, b"old", (), 0)
    world.tick(60)
    a.append(TP, None, b"new", (), 0)
    world.tick(40)
    assert [r.value for r in b.records(TP)] == [b"old"]
    world.tick(60)
    assert [r.value for r in b.records(TP)] == [b"old", b"new"]


def test_a_kill_loses_what_was_not_replicated_and_a_restart_comes_back_empty(world: World) -> None:
    a = world.clusters["a"]
    a.append(TP, None, b"copied", (), 0)
    world.replicate()
    a.append(TP, None, b"not copied", (), 0)
    world.kill("a")
    with pytest.raises(BrokerUnavailable):
        a.append(TP, None, b"x", (), 0)
    assert world.replicate() == 0
    world.restart("a")
    assert a.records(TP) == [] and progress_of(a, "b") == {}
    assert world.replicate() == 1, "the empty cluster is seeded again from the other"
    assert [r.value for r in a.records(TP)] == [b"copied"]
    assert world.backlog("a") == 0


def test_a_dead_member_keeps_its_partitions_until_its_session_expires() -> None:
    cluster = MemoryCluster("c", "c:1", Clock(0))
    cluster.create_topic("t", 2)
    first = cluster.join("g", ["t"], "m1")
    generation, parts = cluster.assignment("g", first)
    assert parts == [("t", 0), ("t", 1)]
    cluster.crash("g", first)
    second = cluster.join("g", ["t"], "m2")
    assert cluster.assignment("g", second)[1] == [("t", 1)], "the dead member still holds partition 0"
    with pytest.raises(CommitRefused):
        cluster.commit("g", first, generation, {("t", 0): 5})  # an older generation
    assert cluster.expire() == 1
    generation, parts = cluster.assignment("g", second)
    assert parts == [("t", 0), ("t", 1)]
    cluster.commit("g", second, generation, {("t", 0): 5})
    assert cluster.committed("g", ("t", 0)) == 5
