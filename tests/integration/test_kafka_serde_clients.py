"""``SerializingProducer`` and ``DeserializingConsumer`` over the facades, side by side with
confluent-kafka's on the same broker: serdes applied, a cooperative-sticky group's assigns and
revokes seen by both when a second member joins and leaves, serde errors raised alike."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.error import ValueDeserializationError
from confluent_kafka.serialization import StringDeserializer, StringSerializer

from hotstandby.adapters.kafka import DeserializingConsumer, SerializingProducer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config

pytestmark = [pytest.mark.apache, pytest.mark.real_tier_only]  # a minute of Tansu rebalances on the lite cluster


def clients(refcluster: RefCluster, namespace: str) -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    """name -> (make a SerializingProducer, make a DeserializingConsumer), each from properties."""
    spec = refcluster.cluster_spec("kafka-a")
    raw_conf = {"bootstrap.servers": spec.url, **spec.client_config("app")}
    return {
        "confluent-kafka": (
            lambda **conf: confluent_kafka.SerializingProducer({**raw_conf, **conf}),
            lambda **conf: confluent_kafka.DeserializingConsumer({**raw_conf, **conf}),
        ),
        "hotstandby": (
            lambda **conf: SerializingProducer(route_config(refcluster, namespace, **conf)),
            lambda **conf: DeserializingConsumer(route_config(refcluster, namespace, **conf)),
        ),
    }


def poll_for(consumers: list[Any], until: Callable[[], bool], timeout: float, got: list[Any]) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"not within {timeout} s; got {len(got)} records"
        for consumer in consumers:
            msg = consumer.poll(0.1)
            if msg is not None:
                got.append((msg.key(), msg.value()))


@pytest.mark.parametrize("strategy", ["range", pytest.param("cooperative-sticky", marks=pytest.mark.apache_only)])
def test_serde_clients_serialize_and_a_group_sees_its_revokes_as_confluent_kafkas(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, strategy: str
) -> None:
    """(Tansu never assigns the second member of a cooperative group.)"""
    seen = {name: run_group(refcluster, make_producer, make_consumer, strategy)
            for name, (make_producer, make_consumer) in clients(refcluster, namespace).items()}  # fmt: skip
    raw, facade = seen["confluent-kafka"], seen["hotstandby"]
    assert raw[0] == facade[0] == sorted((f"k{i}", f"v{i}") for i in range(20)), "deserialized, once"
    # Per member, the rebalances that moved partitions (how many empty ones come is timing).
    assert moves(facade[1]) == moves(raw[1])
    if strategy == "cooperative-sticky":
        assert moves(facade[1]) == {
            "first": [("assign", 2), ("revoke", 1), ("assign", 1), ("revoke", 2)],
            "second": [("assign", 1), ("revoke", 1)],  # its close revokes, as the first's
        }
    else:  # each change revokes everything first; a close revokes what is left
        assert moves(facade[1])["second"] == [("assign", 1), ("revoke", 1)]


def run_group(
    refcluster: RefCluster, make_producer: Callable[..., Any], make_consumer: Callable[..., Any], strategy: str
) -> tuple[list[Any], list[tuple[str, str, int]]]:
    """20 records serialized into two partitions, read by one member, then two, then one: the
    records read and the rebalance callbacks' (member, assign|revoke, partitions)."""
    topic = f"serde-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    producer = make_producer(**{"key.serializer": StringSerializer(), "value.serializer": StringSerializer()})
    for i in range(20):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 2)
    assert producer.flush(30) == 0
    producer.close()
    events: list[tuple[str, str, int]] = []

    def listener(member: str) -> dict[str, Any]:
        def assigned(_: Any, parts: list[Any]) -> None:
            events.append((member, "assign", len(parts)))

        def revoked(_: Any, parts: list[Any]) -> None:
            events.append((member, "revoke", len(parts)))

        return {"on_assign": assigned, "on_revoke": revoked}

    conf = {"group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
            "partition.assignment.strategy": strategy,
            "key.deserializer": StringDeserializer(), "value.deserializer": StringDeserializer()}  # fmt: skip
    first, second = make_consumer(**conf), make_consumer(**conf)
    got: list[Any] = []
    try:
        first.subscribe([topic], **listener("first"))
        poll_for([first], lambda: len(got) >= 20, 60, got)
        second.subscribe([topic], **listener("second"))
        poll_for([first, second], lambda: ("second", "assign", 1) in events, 60, got)
        second.close()
        poll_for([first], lambda: events.count(("first", "assign", 1)) >= 1, 60, got)
        with pytest.raises(NotImplementedError):
            first.consume()
    finally:
        first.close()
    return sorted(got), events


def moves(events: list[tuple[str, str, int]]) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for member, kind, count in events:
        if count:
            found.setdefault(member, []).append((kind, count))
    return found


def test_a_deserializer_that_fails_raises_as_in_confluent_kafka(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    def refuse(value: bytes | None, ctx: Any) -> str:
        raise ValueError(f"not a value of {ctx.topic}")

    seen = {}
    for name, (make_producer, make_consumer) in clients(refcluster, namespace).items():
        topic = f"serde-{uuid.uuid4().hex[:8]}"
        create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
        producer = make_producer(**{"value.serializer": StringSerializer()})
        producer.produce(topic, value="x")
        assert producer.flush(30) == 0
        producer.close()
        consumer = make_consumer(**{"group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                                    "value.deserializer": refuse})  # fmt: skip
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while True:
                assert time.monotonic() < deadline, "no record within 60 s"
                try:
                    if consumer.poll(0.2) is not None:
                        seen[name] = "returned"
                        break
                except ValueDeserializationError as exc:
                    seen[name] = f"{type(exc).__name__}: {exc.kafka_message.value()!r}"
                    break
        finally:
            consumer.close()
    assert seen["hotstandby"] == seen["confluent-kafka"] == "ValueDeserializationError: b'x'"
