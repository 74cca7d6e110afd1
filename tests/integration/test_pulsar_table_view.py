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
from tests.integration import test_pulsar_client as base
from tests.integration.pulsar_helpers import quiet
from tests.support import wait_for

ROUTE = base.ROUTE
client, topic = base.client, base.topic  # the fixtures, shared


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
    """Wait until ``cluster`` holds ``expected`` in ``topic`` (replication is asynchronous).
    A table view of a topic without messages fails on the reference broker (docs/refcluster.md):
    a view is made again at each look."""
    raw = pulsar.Client(refcluster.cluster_spec(cluster).url, logger=quiet())

    def there() -> bool:
        try:
            view = raw.create_table_view(topic)
        except pulsar.UnknownError:
            return False
        try:
            return contents(view) == expected
        finally:
            view.close()

    try:
        wait_for(there, 30, f"{cluster} to hold {expected}")
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
