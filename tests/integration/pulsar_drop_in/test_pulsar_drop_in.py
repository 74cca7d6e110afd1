"""The Pulsar facade behaves as pulsar-client does: each scenario runs on a plain
pulsar.Client and on the SDK's Client (same broker), and their outcomes are compared."""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigError, ForeignPositionError
from hotstandby.failover.identity import HEADER
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_drop_in.support import EARLIEST, ROUTE, fresh_topic, outcome, quiet
from tests.integration.pulsar_helpers import take
from tests.support import wait_for


def test_send_takes_none_and_refuses_what_is_not_bytes_as_pulsar_client_does(clients: dict[str, Any]) -> None:
    contents: list[Any] = [None, 5, "text", bytearray(b"x"), b"", b"last"]
    seen: dict[str, list[str]] = {}
    received: dict[str, list[tuple[bytes, dict[str, str]]]] = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", initial_position=EARLIEST)
        producer = client.create_producer(topic)
        seen[name] = [outcome(lambda c=content, p=producer: p.send(c, properties={"p": "1"})) for content in contents]
        got = take(consumer, 3)
        received[name] = [(m.data(), m.properties()) for m in got]
        for m in got:
            consumer.acknowledge(m)
    assert seen["pulsar-client"] == ["ok", "TypeError", "TypeError", "TypeError", "ok", "ok"]
    assert seen["hotstandby"] == seen["pulsar-client"]
    # The SDK's identity property is not shown to the application.
    assert received["hotstandby"] == received["pulsar-client"] == [(b"", {"p": "1"})] * 2 + [(b"last", {"p": "1"})]


def test_a_handed_out_message_hides_the_identity_but_the_sdk_keeps_it(sdk: Client) -> None:
    topic = fresh_topic()
    consumer = sdk.subscribe(topic, "s", initial_position=EARLIEST)
    reader = sdk.create_reader(topic, pulsar.MessageId.earliest)
    producer = sdk.create_producer(topic)
    producer.send(b"a", properties={"k": "v"})
    for msg in (take(consumer, 1)[0], reader.read_next(10_000)):
        assert msg.properties() == {"k": "v"} and HEADER not in msg.properties()
        rid = identity_of(msg)
        assert rid is not None and rid.sequence == 0
        assert isinstance(msg, pulsar.Message)
    consumer.acknowledge(msg)


@pytest.mark.parametrize("kind", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared])
def test_cumulative_acknowledgement_of_a_shared_subscription_raises(
    clients: dict[str, Any], kind: pulsar.ConsumerType
) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", consumer_type=kind, initial_position=EARLIEST)
        client.create_producer(topic).send(b"m")
        msg = take(consumer, 1)[0]
        seen[name] = outcome(lambda c=consumer, m=msg: c.acknowledge_cumulative(m))
        consumer.acknowledge(msg)
    assert seen == dict.fromkeys(clients, "CumulativeAcknowledgementNotAllowedError")


def test_calls_after_close_raise_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", initial_position=EARLIEST)
        producer = client.create_producer(topic)
        producer.send(b"m")
        msg = take(consumer, 1)[0]
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        consumer.close()
        producer.close()
        reader.close()
        calls: dict[str, Callable[[], Any]] = {
            "receive": lambda c=consumer: c.receive(100),
            "acknowledge": lambda c=consumer, m=msg: c.acknowledge(m),
            "acknowledge_cumulative": lambda c=consumer, m=msg: c.acknowledge_cumulative(m),
            "negative_acknowledge": lambda c=consumer, m=msg: c.negative_acknowledge(m),
            "unsubscribe": lambda c=consumer: c.unsubscribe(),
            "is_connected": lambda c=consumer: c.is_connected(),
            "send": lambda p=producer: p.send(b"x"),
            "send_async": lambda p=producer: p.send_async(b"x", None),
            "flush": lambda p=producer: p.flush(),
            "producer.close": lambda p=producer: p.close(),
            "reader.close": lambda r=reader: r.close(),
            "producer.is_connected": lambda p=producer: p.is_connected(),
            "reader.read_next": lambda r=reader: r.read_next(100),
            "reader.has_message_available": lambda r=reader: r.has_message_available(),
            "reader.is_connected": lambda r=reader: r.is_connected(),
        }
        seen[name] = {call: outcome(fn) for call, fn in calls.items()}
        # pulsar-client says NotConnected or AlreadyClosed (as its connection is, or is not, gone yet)
        seen[name]["seek"] = outcome(lambda c=consumer: c.seek(0), pulsar.PulsarException)
        client.close()
        seen[name]["client.create_producer"] = outcome(lambda c=client, t=topic: c.create_producer(t))
        seen[name]["client.subscribe"] = outcome(lambda c=client, t=topic: c.subscribe(t, "s2"))
    assert seen["hotstandby"] == seen["pulsar-client"]


def test_ctrl_c_while_receive_waits_raises_interrupted(clients: dict[str, Any]) -> None:
    seen = {}
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for name, client in clients.items():
            consumer = client.subscribe(fresh_topic(), "s")
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            try:
                seen[name] = outcome(consumer.receive)  # no message comes: it waits until the signal
            finally:
                timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == dict.fromkeys(clients, "Interrupted")


def test_a_consumer_without_a_receiver_queue_receives_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", receiver_queue_size=0, initial_position=EARLIEST)
        client.create_producer(topic).send(b"m")
        msg = consumer.receive()
        consumer.acknowledge(msg)
        seen[name] = (msg.data(), outcome(lambda c=consumer: c.receive(100)))
    assert seen["hotstandby"] == seen["pulsar-client"]
    assert seen["hotstandby"][0] == b"m"


def test_consumer_and_client_information_as_in_pulsar_client(clients: dict[str, Any], sdk: Client) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", consumer_name="c-1", initial_position=EARLIEST)
        sent = client.create_producer(topic).send(b"m")
        last = consumer.get_last_message_id()
        seen[name] = (consumer.consumer_name(), consumer.is_connected(),
                      (last.ledger_id(), last.entry_id()) == (sent.ledger_id(), sent.entry_id()),
                      client.get_service_info().service_url)  # fmt: skip
        consumer.seek(0)  # a publish time: before every message
    assert seen["hotstandby"] == seen["pulsar-client"] == ("c-1", True, True, sdk.spec.url)


def test_shutdown_stops_at_once_and_then_refuses_as_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        consumer = client.subscribe(topic, "s", initial_position=EARLIEST)
        client.shutdown()
        seen[name] = (outcome(lambda c=client, t=topic: c.create_producer(t)),
                      outcome(lambda c=consumer: c.receive(100)))  # fmt: skip
    assert seen["hotstandby"] == seen["pulsar-client"]
    assert seen["hotstandby"][0] == "AlreadyClosed"


def test_refused_arguments(sdk: Client) -> None:
    topic = fresh_topic()
    with pytest.raises(ConfigError, match="message_router"):
        sdk.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.CustomPartition)
    producer = sdk.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition)
    assert producer.send(b"m") is not None


def test_chunking_arguments_reach_pulsar_client(clients: dict[str, Any]) -> None:
    """10 MiB is more than a broker takes in one message (5 MiB): refused without chunking,
    sent in chunks with it — by pulsar-client and through the facade alike. Read from storage:
    a consumer that waits for it live may never get it from the reference broker
    (docs/refcluster.md)."""
    payload = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        whole = client.create_producer(topic, batching_enabled=False)
        chunked = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
        seen[name] = [outcome(lambda p=whole: p.send(payload)), outcome(lambda p=chunked: p.send(payload))]
        consumer = client.subscribe(topic, "s", initial_position=EARLIEST)
        msg = take(consumer, 1)[0]
        seen[name] += [msg.data() == payload, ";" in str(msg.message_id())]  # a chunked message's id names two
        consumer.acknowledge(msg)
    assert seen["hotstandby"] == seen["pulsar-client"] == ["MessageTooBig", "ok", True, True]


def test_seeking_to_a_message_of_the_cluster_left_raises(sdk: Client, center: ConfigCenter) -> None:
    topic = fresh_topic()
    consumer = sdk.subscribe(topic, "s", initial_position=EARLIEST)
    sdk.create_producer(topic).send(b"m")
    held = take(consumer, 1)[0]
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: sdk.cluster == "pulsar-b", 30, "the switch to pulsar-b")
    with pytest.raises(ForeignPositionError, match="publish time"):
        consumer.seek(held.message_id())
    consumer.seek(0)  # a publish time works on any cluster
    consumer.acknowledge(held)  # by identity: handed out on the cluster left


def test_a_client_dropped_without_close_stops_its_threads(refcluster: RefCluster, center: ConfigCenter,
                                                          namespace: str) -> None:  # fmt: skip
    before = set(threading.enumerate())
    client = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace, logger=quiet())
    topic = fresh_topic()
    client.subscribe(topic, "s").close()
    client.subscribe(topic, "s2", initial_position=EARLIEST)
    client.create_producer(topic).send(b"m")
    assert set(threading.enumerate()) - before
    del client

    def threads_ended() -> bool:
        # Collect again each time: the client sits in reference cycles (its producers and
        # consumers), and a collection that runs while one of its threads holds it for a moment
        # moves it to the oldest generation instead.
        gc.collect()
        return not set(threading.enumerate()) - before

    wait_for(threads_ended, 10, "the dropped client's threads to end")
