"""The Pulsar facade behaves as pulsar-client does with several topics, patterns, listeners,
readers and table views: each scenario runs on a plain pulsar.Client and on the SDK's Client
(same broker), and their outcomes are compared."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.reader.reader import Reader
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_drop_in.support import EARLIEST, ROUTE, fresh_topic, outcome, quiet
from tests.integration.pulsar_helpers import take
from tests.support import wait_for


def test_a_consumer_of_a_list_of_topics_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        first, second = fresh_topic(), fresh_topic()
        consumer = client.subscribe([first, second], "s", initial_position=EARLIEST)
        for topic in (first, second):
            client.create_producer(topic).send(topic.encode(), properties={"p": "1"})
        got = take(consumer, 2)
        for m in got:
            consumer.acknowledge_cumulative(m)  # per topic, as pulsar-client's multi-topic consumer
        seen[name] = (sorted((m.topic_name() == m.data().decode(), m.properties()["p"]) for m in got),
                      outcome(consumer.get_last_message_id, pulsar.PulsarException),
                      outcome(lambda c=client: c.subscribe(("t",), "s")))  # fmt: skip
        consumer.close()
    assert seen["hotstandby"] == seen["pulsar-client"]
    topics, last_id, not_a_topic = seen["hotstandby"]
    assert (topics, not_a_topic) == ([(True, "1"), (True, "1")], "ValueError")
    assert last_id != "ok", "pulsar-client has no last message id of several topics"


def test_a_pattern_the_broker_cannot_resolve_fails_as_in_pulsar_client(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """The reference broker answers no GetTopicsOfNamespace: without topics registered for the
    cluster in the config center, the facade asks the broker, as pulsar-client does."""
    sdk = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                 operation_timeout_seconds=2, logger=quiet())  # fmt: skip
    raw = pulsar.Client(sdk.spec.url, operation_timeout_seconds=2, logger=quiet())
    try:
        pattern = re.compile(f"persistent://public/default/{uuid.uuid4().hex[:8]}-.*")
        seen = {name: outcome(lambda c=c: c.subscribe(pattern, "s")) for name, c in (("raw", raw), ("sdk", sdk))}
    finally:
        sdk.close()
        raw.close()
    assert seen == {"raw": "LookupError", "sdk": "LookupError"}


def test_a_reader_listener_is_called_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    """Each message once, and ``read_next`` refused. pulsar-client 3.13 hands the listener a
    ``pulsar.Consumer`` (its reader's inside); the facade hands it the reader, as pulsar-client
    documents."""
    seen, owners = {}, {}
    for name, client in clients.items():
        topic = fresh_topic()
        got: list[tuple[bytes, dict[str, str]]] = []

        def listener(owner: Any, msg: pulsar.Message, got: list[Any] = got, name: str = name) -> None:
            owners[name] = owner
            got.append((msg.data(), msg.properties()))

        reader = client.create_reader(topic, pulsar.MessageId.earliest, reader_listener=listener)
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode(), properties={"i": str(i)})
        wait_for(lambda got=got: len(got) == 3, 10, f"{name}: the listener to get 3 messages")
        seen[name] = (got, outcome(lambda r=reader: r.read_next(100)))
        reader.close()
    assert seen["hotstandby"] == seen["pulsar-client"]
    assert seen["hotstandby"] == ([(f"m{i}".encode(), {"i": str(i)}) for i in range(3)], "InvalidConfiguration")
    assert isinstance(owners["pulsar-client"], pulsar.Consumer)
    assert isinstance(owners["hotstandby"], Reader)


def test_a_table_view_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        producer = client.create_producer(topic, schema=pulsar.schema.StringSchema())
        for key, value in (("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("c", ""), ("", "no key")):
            producer.send(value, partition_key=key or None)
        view = client.create_table_view(topic, schema=pulsar.schema.StringSchema())
        entries: dict[str, str] = {}
        view.for_each(entries.__setitem__)
        heard: list[tuple[str, str]] = []
        view.for_each_and_listen(lambda k, v, heard=heard: heard.append((k, v)))
        producer.send("3", partition_key="b")
        producer.send("", partition_key="a")
        wait_for(lambda heard=heard: len(heard) == 4, 10, f"{name}: the listener to hear of 2 updates")
        heard[:2] = sorted(heard[:2])  # the entries first, in the map's order
        seen[name] = (entries, heard, len(view), view.get("b"), view.get("a"), str(view))
        view.close()
        seen[name] += (view.get("b"),)  # closed: the map stays readable
    assert seen["hotstandby"][:-2] == seen["pulsar-client"][:-2]
    assert seen["hotstandby"][-1] == seen["pulsar-client"][-1]
    assert seen["hotstandby"][:5] == ({"a": "2", "b": "1"}, [("a", "2"), ("b", "1"), ("b", "3"), ("a", "")], 1, "3",
                                      None)  # fmt: skip


def test_a_message_listener_is_called_paused_and_resumed_as_in_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        got: list[tuple[bytes, dict[str, str]]] = []

        def listener(consumer: Any, msg: pulsar.Message, got: list[tuple[bytes, dict[str, str]]] = got) -> None:
            got.append((msg.data(), msg.properties()))
            consumer.acknowledge(msg)

        consumer = client.subscribe(topic, "s", message_listener=listener, initial_position=EARLIEST)
        plain = client.subscribe(topic, "plain", initial_position=EARLIEST)
        producer = client.create_producer(topic)
        for i in range(3):
            producer.send(f"m{i}".encode(), properties={"i": str(i)})
        wait_for(lambda got=got: len(got) == 3, 10, f"{name}: the listener to get 3 messages")
        consumer.pause_message_listener()
        producer.send(b"m3", properties={"i": "3"})
        consumer.resume_message_listener()
        wait_for(lambda got=got: len(got) == 4, 10, f"{name}: the listener to get the message sent while paused")
        seen[name] = (got, outcome(lambda c=consumer: c.receive(100)), outcome(plain.pause_message_listener))
        consumer.close()
    assert seen["hotstandby"] == seen["pulsar-client"]
    assert seen["hotstandby"] == (
        [(f"m{i}".encode(), {"i": str(i)}) for i in range(4)],
        "InvalidConfiguration",  # receive() on a consumer with a listener
        "InvalidConfiguration",  # pause_message_listener() on one without
    )


def test_topic_is_the_full_name_as_pulsar_client_gives_it(clients: dict[str, Any]) -> None:
    short = f"drop-in-{uuid.uuid4().hex[:8]}"
    given = [short, f"public/default/{short}-ns", f"persistent://public/default/{short}-full"]
    seen = {}
    for name, client in clients.items():
        named = []
        for topic in given:
            producer = client.create_producer(topic)
            consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            named.append((producer.topic(), consumer.topic(), reader.topic()))
            for made in (producer, consumer, reader):
                made.close()
        seen[name] = named
    assert seen["hotstandby"] == seen["pulsar-client"]
    assert seen["pulsar-client"][1] == (f"persistent://public/default/{short}-ns",) * 3


def test_a_multi_topic_consumer_refuses_an_id_without_a_topic_as_pulsar_client(clients: dict[str, Any]) -> None:
    seen = {}
    for name, client in clients.items():
        topic = fresh_topic()
        sent = client.create_producer(topic).send(b"m")  # the id a producer gets names no topic
        consumer = client.subscribe([topic, f"{topic}-other"], "s", initial_position=EARLIEST)
        seen[name] = outcome(lambda c=consumer, m=sent: c.acknowledge(m))
        consumer.close()
    assert seen == dict.fromkeys(clients, "OperationNotSupported")
