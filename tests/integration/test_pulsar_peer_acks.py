"""Two processes' consumers of one Shared subscription across a switch: what one of them still
holds when the route flips and acknowledges during the switch is not handed out by the other
on the new cluster (the copies there are filtered once the switch stored those acks)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import nothing_more, quiet, replicated, take

# pulsar-lite does not let a second client subscribe to a Shared subscription whose messages
# another client holds (the raw pulsar-client's subscribe times out there too).
pytestmark = [pytest.mark.apache, pytest.mark.apache_only]

ROUTE = "payments"


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    name = f"persistent://public/default/peer-{uuid.uuid4().hex[:8]}"
    replicated(refcluster, name)
    return name


@pytest.fixture
def clients(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[list[Client]]:
    made = [
        Client(
            ROUTE,
            etcd=f"127.0.0.1:{refcluster.ports.etcd}",
            namespace=namespace,
            client_id=f"peer-{i}",
            operation_timeout_seconds=10,
            logger=quiet(),
        )
        for i in range(2)
    ]
    yield made
    for client in made:
        client.close()


def test_what_a_peer_acknowledges_during_the_switch_is_not_handed_out_on_the_new_cluster(
    clients: list[Client], center: ConfigCenter, topic: str
) -> None:
    holder, other = clients
    subscribe = {"consumer_type": pulsar.ConsumerType.Shared, "initial_position": pulsar.InitialPosition.Earliest}
    holding = holder.subscribe(topic, "s", receiver_queue_size=100, **subscribe)
    producer = holder.create_producer(topic)
    values = [f"m{i}" for i in range(20)]
    for value in values:
        producer.send(value.encode())
    held = take(holding, len(values))  # all with the holder, none acknowledged yet
    reading = other.subscribe(topic, "s", **subscribe)
    acked: list[str] = []

    def acknowledge_during_the_switch() -> None:
        """The holder's application finishes its messages a moment into the switch."""
        time.sleep(0.3)  # the work the application does with them, not a wait for a condition
        for msg in held:
            holding.acknowledge(msg)
            acked.append(msg.data().decode())

    worker = threading.Thread(target=acknowledge_during_the_switch)
    center.switch(ROUTE, "pulsar-b", reason="test")
    worker.start()
    handed: list[str] = []
    deadline = time.monotonic() + 30
    while other.cluster != "pulsar-b" or holder.cluster != "pulsar-b":
        assert time.monotonic() < deadline, "both clients on pulsar-b within 30 s"
        try:
            handed.append(reading.receive(timeout_millis=100).data().decode())
        except pulsar.Timeout:
            continue
    worker.join(10)
    handed += nothing_more(reading, within=5.0)
    assert sorted(acked) == sorted(values)
    assert handed == [], f"the other consumer handed out what the holder acknowledged: {handed}"
