"""Fixtures of the Kafka surface tests: an in-memory config center with one cluster whose
port is closed, and raw and facade clients side by side on it."""

from __future__ import annotations

from collections.abc import Iterator

import confluent_kafka
import pytest

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from tests.unit.kafka_surface.support import BROKER, RAW, ROUTE


@pytest.fixture
def center() -> ConfigCenter:
    center = ConfigCenter(MemoryStore())
    center.put_cluster(ClusterSpec(name="kafka-a", kind="kafka", url=BROKER))
    center.create_route("r", ["kafka-a"], "kafka-a")
    return center


@pytest.fixture
def producers(center: ConfigCenter) -> Iterator[tuple[confluent_kafka.Producer, Producer]]:
    raw = confluent_kafka.Producer(RAW)
    facade = Producer(ROUTE, center=center)
    yield raw, facade
    for client in (raw, facade):
        if len(client):
            client.purge()
        client.close(0)


@pytest.fixture
def consumers(center: ConfigCenter) -> Iterator[tuple[confluent_kafka.Consumer, Consumer]]:
    # No auto commit: closing would wait for a commit to the broker that is not there.
    group = {"group.id": "g", "enable.auto.commit": False}
    raw = confluent_kafka.Consumer({**RAW, **group})
    facade = Consumer({**ROUTE, **group}, center=center)
    yield raw, facade
    raw.close()
    facade.close()
