"""The adapter contract on the in-memory adapter (no processes; replication runs when the kit
says, as a replicator that is always up to date would)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import pytest

from hotstandby.adapters.memory.consumer import Consumer
from hotstandby.adapters.memory.producer import Producer
from hotstandby.adapters.memory.world import World
from tests.contract.adapter import AdapterContract, Received

ROUTE, TOPIC, GROUP = "r", "t", "g"
OPTIONS = {"hotstandby.route": ROUTE, "hotstandby.etcd.timeout.ms": 1000}


class MemoryProducer:
    def __init__(self, kit: MemoryKit) -> None:
        self.inner = Producer(OPTIONS, center=kit.world.center, clock=kit.world.clock.monotonic)
        kit.clients.append(self.inner)

    def send(self, values: Sequence[str]) -> None:
        for value in values:
            self.inner.produce(TOPIC, value=value, key=value)
        assert self.inner.flush(10) == 0

    def close(self) -> None:
        self.inner.close()


class MemoryConsumer:
    def __init__(self, kit: MemoryKit) -> None:
        self.kit = kit
        self.inner = Consumer({**OPTIONS, "group.id": GROUP, "enable.auto.commit": False}, center=kit.world.center)
        self.inner.subscribe([TOPIC])
        kit.clients.append(self.inner)

    def take(self, count: int, timeout: float) -> list[Received]:
        got: list[Received] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            assert time.monotonic() < deadline, f"{len(got)} of {count} records within {timeout} s"
            self.kit.world.replicate()
            msg = self.inner.poll(0)
            if msg is None:
                time.sleep(0.001)  # the ledger claim of a partition may wait for the store
                continue
            got.append(Received((msg.value() or b"").decode(), msg.identity(), msg))
        return got

    def ack(self, received: Received) -> None:
        self.inner.commit(message=received.handle, asynchronous=False)

    def quiet(self) -> list[str]:
        self.kit.world.replicate()
        return [(m.value() or b"").decode() for m in iter(lambda: self.inner.poll(0), None)]

    def close(self) -> None:
        self.inner.close()


class MemoryKit:
    def __init__(self) -> None:
        self.world = World(("mem-a", "mem-b"))
        self.world.create_topic(TOPIC, 3)
        self.world.create_route(ROUTE, "mem-a")
        self.clients: list[Producer | Consumer] = []

    def producer(self) -> MemoryProducer:
        return MemoryProducer(self)

    def consumer(self) -> MemoryConsumer:
        return MemoryConsumer(self)

    def flip(self) -> None:
        route = self.world.center.route(ROUTE)
        flipped = self.world.flip(ROUTE, "mem-b" if route.active == "mem-a" else "mem-a")
        for client in self.clients:
            assert client.wait_for_route(flipped.epoch, 5.0), f"{client.options.client_id} did not switch"


class TestMemoryAdapter(AdapterContract):
    kind = "memory"

    @pytest.fixture
    def kit(self) -> Iterator[MemoryKit]:
        kit = MemoryKit()
        yield kit
        kit.world.store.disconnect()  # wakes the clients' watches: their threads stop at once
        kit.world.close()

    @pytest.fixture
    def live_broker(self, kit: MemoryKit) -> tuple[str, int]:
        return kit.world.center.cluster("mem-a").endpoints()[0]

    @pytest.fixture
    def dead_broker(self, kit: MemoryKit) -> tuple[str, int]:
        kit.world.kill("mem-b")
        return kit.world.center.cluster("mem-b").endpoints()[0]
