"""One Pulsar facade consumer of several topics — a list or a pattern — on the reference
cluster, across a switch: acknowledgements per topic, every topic moves, a pattern is resolved
again on the new cluster."""

from __future__ import annotations

import random
import re
import uuid

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, acknowledge_until, nothing_more, replicated, take
from tests.support import wait_for


def send(client: Client, topic: str, values: list[str]) -> None:
    producer = client.create_producer(topic)
    for v in values:
        producer.send_async(v.encode(), None)
    producer.flush()
    producer.close()


def test_a_list_of_topics_keeps_acknowledgements_per_topic_across_a_switch(
    refcluster: RefCluster, client: Client, center: ConfigCenter
) -> None:
    """A Shared consumer of two topics (one named short, as pulsar-client takes it): 60 of 100
    messages handed out, 40 acknowledged, a flip, 40 more. Each message comes from the topic it
    was sent to; nothing acknowledged comes again; every topic's ledger is its own."""
    u = uuid.uuid4().hex[:8]
    first, second = f"persistent://public/default/list-{u}-1", f"persistent://public/default/list-{u}-2"
    replicated(refcluster, first, second)
    short = first.rsplit("/", 1)[1]
    consumer = client.subscribe([short, second], "s", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    send(client, first, [f"1:{i}" for i in range(50)])
    send(client, second, [f"2:{i}" for i in range(50)])
    got = take(consumer, 60)
    assert all(m.topic_name() == (first if m.data().startswith(b"1:") else second) for m in got)
    random.Random(3).shuffle(got)
    acked = {m.data().decode() for m in got[:40]}
    for m in got[:40]:
        consumer.acknowledge(m)
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    send(client, first, [f"1:{i}" for i in range(50, 70)])
    send(client, second, [f"2:{i}" for i in range(50, 70)])
    wanted = {f"{t}:{i}" for t in (1, 2) for i in range(70)} - acked
    later = acknowledge_until(consumer, wanted, timeout=120) + nothing_more(consumer)
    assert not acked & set(later), "acknowledged before the switch, handed out again"
    assert sorted(later) == sorted(wanted), "each message once"
    assert consumer.filtered >= 40, "pulsar-b's copies of the acknowledged messages were read and filtered"
    consumer.close()
    store = LedgerStore(center)
    # Each topic under the name it was listed by; nothing under another name.
    assert len(store.load("s", short, 0).ledger) == 70
    assert len(store.load("s", second, 0).ledger) == 70
    assert len(store.load("s", first, 0).ledger) == 0


def test_a_pattern_is_resolved_again_on_the_cluster_switched_to(
    refcluster: RefCluster, client: Client, center: ConfigCenter
) -> None:
    """The reference broker cannot list topics: a pattern matches the topics registered for the
    active cluster. ``-3`` exists on pulsar-b only: read after the flip, not before; a topic the
    pattern does not match is never read."""
    u = uuid.uuid4().hex[:8]
    one, two, three = (f"persistent://public/default/pat-{u}-{n}" for n in (1, 2, 3))
    other = f"persistent://public/default/other-{u}-1"
    replicated(refcluster, one, two, other)
    for cluster in ("pulsar-a", "pulsar-b"):
        for topic in (one, two, other):
            center.register_topic(cluster, topic)
    center.register_topic("pulsar-b", three)
    consumer = client.subscribe(re.compile(f"persistent://public/default/pat-{u}-.*"), "s",
                                consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    send(client, one, [f"1:{i}" for i in range(30)])
    send(client, two, [f"2:{i}" for i in range(30)])
    send(client, other, [f"x:{i}" for i in range(10)])
    send(client, three, [f"3:{i}" for i in range(10)])  # on pulsar-a: not registered there
    before = acknowledge_until(consumer, {f"{t}:{i}" for t in (1, 2) for i in range(30)})
    assert nothing_more(consumer, within=1.5) == [], "only the registered topics the pattern matches"
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    for topic, n in ((one, 1), (two, 2), (three, 3)):
        send(client, topic, [f"{n}:{i}" for i in range(100, 110)])
    wanted = {f"{t}:{i}" for t in (1, 2, 3) for i in range(100, 110)}
    after = acknowledge_until(consumer, wanted) + nothing_more(consumer)
    assert sorted(before) == sorted({f"{t}:{i}" for t in (1, 2) for i in range(30)})
    assert sorted(after) == sorted(wanted), "pulsar-b's copies filtered, its own -3 read, each once"
