"""The outbox's rule through a real producer (the memory adapter): what a switch sends again,
and for how long a record re-sent to the new cluster stays protected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hotstandby.adapters.memory.producer import Producer
from hotstandby.adapters.memory.world import World
from hotstandby.failover.identity import HEADER

ROUTE, TOPIC = "r", "t"
WINDOW_MS = 1_000


@pytest.fixture
def world() -> Iterator[World]:
    world = World(("mem-a", "mem-b"))
    world.create_topic(TOPIC, 1)
    world.create_route(ROUTE, "mem-a")
    yield world
    world.store.disconnect()
    world.close()


def flip(world: World, producer: Producer, to: str) -> None:
    route = world.flip(ROUTE, to)
    assert producer.wait_for_route(route.epoch, 5.0), "the producer did not switch"


def values_on(world: World, cluster: str) -> list[str]:
    records = world.clusters[cluster].records((TOPIC, 0))
    assert all(any(k == HEADER for k, _ in r.headers) for r in records)
    return [(r.value or b"").decode() for r in records]


def test_a_record_resent_to_the_new_cluster_is_protected_for_a_window_from_that_acknowledgement(
    world: World,
) -> None:
    """r0 is acknowledged by mem-a at 0 ms and lost with it; re-sent, mem-b acknowledges it at
    900 ms. At 1 500 ms mem-b is lost before replicating anything: r0's first acknowledgement is
    older than the window, its acknowledgement by mem-b is not, so it is sent again."""
    options = {"hotstandby.route": ROUTE, "hotstandby.replay.window.ms": WINDOW_MS, "hotstandby.etcd.timeout.ms": 1000}
    producer = Producer(options, center=world.center, clock=world.clock.monotonic)
    try:
        producer.produce(TOPIC, value="r0")
        assert producer.flush(5) == 0
        world.clock.advance(900)
        world.kill("mem-a")
        world.restart("mem-a")  # back empty: r0 is gone from it, never replicated
        flip(world, producer, "mem-b")
        assert producer.flush(5) == 0
        assert values_on(world, "mem-b") == ["r0"]

        world.clock.advance(600)
        producer.produce(TOPIC, value="r1")  # acknowledged now: the window moves on
        assert producer.flush(5) == 0
        world.kill("mem-b")
        flip(world, producer, "mem-a")
        assert producer.flush(5) == 0
    finally:
        producer.close(5)
    assert values_on(world, "mem-a") == ["r0", "r1"]


def test_the_switch_sends_nothing_replication_copied_and_everything_else_in_order(world: World) -> None:
    options = {"hotstandby.route": ROUTE, "hotstandby.timestamp.skew.ms": 0, "hotstandby.etcd.timeout.ms": 1000}
    producer = Producer(options, center=world.center, clock=world.clock.monotonic)
    try:
        for i in range(3):
            producer.produce(TOPIC, value=f"r{i}")
        assert producer.flush(5) == 0
        world.clock.advance(10)
        assert world.replicate(2) == 2  # r0 and r1 reach mem-b, with their position
        producer.produce(TOPIC, value="r3")
        assert producer.flush(5) == 0
        world.kill("mem-a")
        flip(world, producer, "mem-b")
        assert producer.flush(5) == 0
        assert (producer.trimmed, producer.resent) == (2, 2)
    finally:
        producer.close(5)
    assert values_on(world, "mem-b") == ["r0", "r1", "r2", "r3"]
