"""The adapter contract for Kafka, on the reference cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence

import pytest

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.contract.adapter import AdapterContract, DrillContract, Received
from tests.integration.kafka_helpers import create_topic, route_config
from tests.support import wait_for

ROUTE = "orders"


class KafkaProducer:
    def __init__(self, kit: KafkaKit) -> None:
        self.inner = Producer(route_config(kit.rc, kit.namespace))
        self.topic = kit.topic
        kit.clients.append(self.inner)

    def send(self, values: Sequence[str]) -> None:
        for value in values:
            self.inner.produce(self.topic, key=value, value=value)
        assert self.inner.flush(60) == 0

    def close(self) -> None:
        self.inner.close()


class KafkaConsumer:
    def __init__(self, kit: KafkaKit) -> None:
        config = route_config(kit.rc, kit.namespace, **{"group.id": kit.group, "enable.auto.commit": False})
        self.inner = Consumer(config)
        self.inner.subscribe([kit.topic])
        kit.clients.append(self.inner)

    def take(self, count: int, timeout: float) -> list[Received]:
        got: list[Received] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            assert time.monotonic() < deadline, f"{len(got)} of {count} records within {timeout} s"
            msg = self.inner.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            # The facade hands out its messages without the hs-id header; their identity is hs_id.
            got.append(Received(msg.value().decode(), getattr(msg, "hs_id", None), msg))
        return got

    def ack(self, received: Received) -> None:
        self.inner.commit(message=received.handle, asynchronous=False)

    def quiet(self) -> list[str]:
        extra, deadline = [], time.monotonic() + 1.0
        while time.monotonic() < deadline:
            msg = self.inner.poll(0.1)
            if msg is not None and msg.error() is None:
                extra.append(msg.value().decode())
        return extra

    def close(self) -> None:
        self.inner.close()


class KafkaKit:
    def __init__(self, rc: RefCluster, center: ConfigCenter, namespace: str) -> None:
        self.rc, self.center, self.namespace = rc, center, namespace
        self.topic, self.group = f"contract-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:6]}"
        for cluster in ("kafka-a", "kafka-b"):
            create_topic(rc.cluster_spec(cluster), self.topic, 2)
        self.clients: list[Producer | Consumer] = []

    def producer(self) -> KafkaProducer:
        return KafkaProducer(self)

    def consumer(self) -> KafkaConsumer:
        return KafkaConsumer(self)

    def flip(self) -> None:
        """Flip, and wait until the clients made so far run on the new cluster."""
        target = "kafka-b" if self.center.route(ROUTE).active == "kafka-a" else "kafka-a"
        self.center.switch(ROUTE, target, reason="contract")
        for client in self.clients:
            wait_for(lambda c=client: c.cluster == target, 30, f"{type(client).__name__} on {target}")


class TestKafkaAdapter(AdapterContract, DrillContract):
    kind = "kafka"
    cluster = "kafka-a"

    @pytest.fixture
    def live_broker(self, refcluster: RefCluster) -> tuple[str, int]:
        return refcluster.cluster_spec("kafka-a").endpoints()[0]

    @pytest.fixture
    def kit(self, refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[KafkaKit]:
        yield KafkaKit(refcluster, center, namespace)
