"""The adapter contract for Pulsar, on the reference cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.contract.adapter import AdapterContract, DrillContract, Received
from tests.support import wait_for

ROUTE = "payments"


class PulsarProducer:
    def __init__(self, kit: PulsarKit) -> None:
        self.inner = kit.client.create_producer(kit.topic)

    def send(self, values: Sequence[str]) -> None:
        for value in values:
            self.inner.send(value.encode(), partition_key=value)
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


class PulsarConsumer:
    def __init__(self, kit: PulsarKit) -> None:
        self.inner: Any = kit.client.subscribe(kit.topic, kit.subscription, consumer_type=pulsar.ConsumerType.Shared,
                                               initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip

    def take(self, count: int, timeout: float) -> list[Received]:
        got: list[Received] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            left = deadline - time.monotonic()
            assert left > 0, f"{len(got)} of {count} messages within {timeout} s"
            try:
                msg = self.inner.receive(timeout_millis=int(min(left, 1.0) * 1000))
            except pulsar.Timeout:
                continue
            # The facade keeps the identity aside: its messages' properties do not show it.
            got.append(Received(msg.data().decode(), identity_of(msg), msg))
        return got

    def ack(self, received: Received) -> None:
        self.inner.acknowledge(received.handle)

    def quiet(self) -> list[str]:
        extra: list[str] = []
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                extra.append(self.inner.receive(timeout_millis=200).data().decode())
            except pulsar.Timeout:
                continue
        return extra

    def close(self) -> None:
        self.inner.close()


class PulsarKit:
    def __init__(self, client: Client, center: ConfigCenter, topic: str) -> None:
        self.client, self.center, self.topic = client, center, topic
        self.subscription = f"s-{uuid.uuid4().hex[:6]}"

    def producer(self) -> PulsarProducer:
        return PulsarProducer(self)

    def consumer(self) -> PulsarConsumer:
        return PulsarConsumer(self)

    def flip(self) -> None:
        """Flip, and wait until the client (its producers and consumers) runs on the new cluster."""
        target = "pulsar-b" if self.center.route(ROUTE).active == "pulsar-a" else "pulsar-a"
        self.center.switch(ROUTE, target, reason="contract")
        wait_for(lambda: self.client.cluster == target, 30, f"the client on {target}")


class TestPulsarAdapter(AdapterContract, DrillContract):
    kind = "pulsar"
    cluster = "pulsar-a"

    @pytest.fixture
    def live_broker(self, refcluster: RefCluster) -> tuple[str, int]:
        return refcluster.cluster_spec("pulsar-a").endpoints()[0]

    @pytest.fixture
    def kit(self, refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[PulsarKit]:
        topic = f"persistent://public/default/contract-{uuid.uuid4().hex[:8]}"
        with ConfigCenter.open(replace(refcluster.settings())) as registry:  # the replicators' topic list
            for cluster in ("pulsar-a", "pulsar-b"):
                registry.register_topic(cluster, topic)
        client = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                        operation_timeout_seconds=10, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/null"))  # fmt: skip
        try:
            yield PulsarKit(client, center, topic)
        finally:
            client.close()
