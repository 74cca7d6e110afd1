"""The Pulsar facade's table view on the reference cluster: the map of the cluster in use,
made anew on the cluster switched to; its listeners hear of what the switch changed, once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import REPLICATED_FROM
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, quiet
from tests.support import wait_for


def write(client: Client, topic: str, entries: list[tuple[str, bytes]]) -> None:
    """``(key, value)`` messages, in order; a closed producer re-sends nothing at a switch."""
    producer = client.create_producer(topic)
    for key, value in entries:
        producer.send(value, partition_key=key)
    producer.close()


def contents(view: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    view.for_each(found.__setitem__)
    return found


class Heard:
    """What a listener was called with, and on which threads."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, key: str, value: bytes) -> None:
        with self._lock:
            self.calls.append((key, value))
            self.threads.add(threading.current_thread().name)

    def taken(self) -> list[tuple[str, bytes]]:
        """The calls so far (forgotten, with their threads)."""
        with self._lock:
            calls, self.calls = self.calls, []
            self.threads = set()
        return calls


def holds(refcluster: RefCluster, cluster: str, topic: str, expected: dict[str, bytes]) -> None:
    """Wait until ``cluster`` holds ``expected`` in ``topic`` (replication is asynchronous): a
    reader from the start, each key's last value (pulsar-client's own table view dies on a
    topic of many messages; on the reference broker a reader of a topic without messages
    fails: docs/refcluster.md)."""
    raw = pulsar.Client(refcluster.cluster_spec(cluster).url, logger=quiet())

    def there() -> bool:
        found: dict[str, bytes] = {}
        reader = raw.create_reader(topic, pulsar.MessageId.earliest)
        try:
            while reader.has_message_available():
                msg = reader.read_next(10_000)
                if msg.data():
                    found[msg.partition_key()] = msg.data()
                else:
                    found.pop(msg.partition_key(), None)
        except (pulsar.UnknownError, pulsar.Timeout):  # a copy still being written: look again
            return False
        finally:
            reader.close()
        return found == expected

    try:
        wait_for(there, 60, f"{cluster} to hold {len(expected)} keys")
    finally:
        raw.close()


def stays(predicate: Any, within: float) -> bool:
    """Whether ``predicate()`` holds all along ``within`` s (a bounded wait for an absence)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(0.05)
    return True


def test_a_table_view_follows_the_route_and_its_listener_hears_what_changed_once(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    write(client, topic, [("k0", b"v1"), ("k1", b"v1"), ("k2", b"v1"), ("k3", b"v1"), ("k4", b"v1"),
                          ("k0", b"v2"), ("k4", b"")])  # fmt: skip
    view = client.create_table_view(topic)
    first = {"k0": b"v2", "k1": b"v1", "k2": b"v1", "k3": b"v1"}
    assert contents(view) == first and len(view) == 4 and view.get("k4") is None
    heard = Heard()
    view.for_each_and_listen(heard)
    assert sorted(heard.taken()) == sorted(first.items())
    holds(refcluster, "pulsar-b", topic, first)  # the switch comes once pulsar-b holds the copies
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    write(client, topic, [("k1", b"v3"), ("k2", b""), ("k5", b"v1")])  # on pulsar-b
    after = {"k0": b"v2", "k1": b"v3", "k3": b"v1", "k5": b"v1"}
    wait_for(lambda: contents(view) == after, 30, "the view to show pulsar-b's updates")
    assert stays(lambda: len(heard.calls) <= 3, 1.5)
    assert sorted(heard.taken()) == [("k1", b"v3"), ("k2", b""), ("k5", b"v1")], "each change once, nothing else"
    assert len(view) == 4 and view.get("k1") == b"v3" and str(view) == f"TableView(topic={topic})"
    view.close()
    write(client, topic, [("k6", b"v1")])
    assert stays(lambda: not heard.calls, 1.5), "a closed view calls nobody"


def test_a_listener_hears_what_changed_on_the_cluster_switched_to_while_it_moved(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """pulsar-b holds a value pulsar-a does not have (a copy whose original pulsar-a lost: the
    replicator never copies a copy back): after the switch the listener hears of it, and of
    nothing else — the new cluster's map is what counts."""
    write(client, topic, [("k0", b"v1"), ("k1", b"v1")])
    view = client.create_table_view(topic, "view-sub")
    heard = Heard()
    view.for_each_and_listen(heard)
    assert sorted(heard.taken()) == [("k0", b"v1"), ("k1", b"v1")]
    holds(refcluster, "pulsar-b", topic, {"k0": b"v1", "k1": b"v1"})
    raw_b = pulsar.Client(refcluster.cluster_spec("pulsar-b").url, logger=quiet())
    try:
        raw_b.create_producer(topic).send(b"only-b", partition_key="k1", properties={REPLICATED_FROM: "pulsar-a"})
    finally:
        raw_b.close()
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    wait_for(lambda: heard.calls, 30, "the listener to hear of the switch")
    assert stays(lambda: len(heard.calls) <= 1, 1.5)
    assert heard.threads == {"hotstandby-table-view"}, "not on the switch's thread"
    assert heard.taken() == [("k1", b"only-b")]
    assert str(view) == f"TableView(topic={topic}, subscription=view-sub)"


def test_a_view_of_a_topic_of_many_messages_is_made_again_at_a_switch(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """20 000 messages: pulsar-client 3.13's own view reads them in nested calls and overflows
    its thread's stack (the process dies: docs/pulsar-api.md); the facade's view reads them in
    a loop, on pulsar-a and again on pulsar-b at the switch."""
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5,
                                      block_if_queue_full=True)  # fmt: skip
    for i in range(20_000):
        producer.send_async(f"v{i}".encode(), None, partition_key=f"k{i % 2000}")
    producer.close()
    final = {f"k{i % 2000}": f"v{i}".encode() for i in range(20_000)}
    view = client.create_table_view(topic)
    assert contents(view) == final
    holds(refcluster, "pulsar-b", topic, final)
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 60, "the client to move")
    write(client, topic, [("k0", b"on-b")])
    wait_for(lambda: view.get("k0") == b"on-b", 30, "pulsar-b's update")
    assert len(view) == 2000


def test_messages_a_producer_sends_again_at_a_switch_are_not_applied_twice(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """A producer still open at the switch sends its replay window again to pulsar-b, after
    pulsar-b's copies: the view applies each message once, so its listener hears nothing of it."""
    producer = client.create_producer(topic)
    entries = {f"k{i}": f"v{i}".encode() for i in range(20)}
    for key, value in entries.items():
        producer.send(value, partition_key=key)
    view = client.create_table_view(topic)
    heard = Heard()
    view.for_each_and_listen(heard)
    assert dict(heard.taken()) == entries
    holds(refcluster, "pulsar-b", topic, entries)
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    wait_for(lambda: producer.resent >= 20, 30, "the producer to send its replay window again")
    producer.send(b"last", partition_key="k0")  # after the re-sent ones
    wait_for(lambda: view.get("k0") == b"last", 30, "the view to read pulsar-b's new message")
    assert heard.taken() == [("k0", b"last")], "the re-sent messages were applied again"
    assert contents(view) == {**entries, "k0": b"last"}


def test_a_view_holds_all_of_a_topic_that_ends_in_a_batch(client: Client, topic: str) -> None:
    """pulsar-client says nothing is left after some messages of the reference broker's last
    batch now and then (4 readers of 100 stopped after 1 or 4 of 20, docs/refcluster.md): each
    of 50 views reads the batch to its end."""
    producer = client.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(20):
        producer.send_async(f"v{i}".encode(), None, partition_key=f"k{i}")
    producer.close()
    sizes = []
    for _ in range(50):
        view = client.create_table_view(topic)
        sizes.append(len(view))
        view.close()
    assert sizes == [20] * 50
