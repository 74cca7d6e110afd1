"""A chunked message (10 MiB, more than a broker takes in one) through the Pulsar facade on
the reference cluster: handed out once, replicated, filtered on the cluster switched to."""

from __future__ import annotations

import uuid

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration import test_pulsar_client as base
from tests.integration.pulsar_helpers import nothing_more, quiet, replicated, take
from tests.support import wait_for

ROUTE = base.ROUTE
client = base.client  # the fixture, shared
PAYLOAD = bytes(range(256)) * (10 * 1024 * 1024 // 256)


def stored_on(refcluster: RefCluster, cluster: str, topic: str, count: int) -> list[bytes]:
    """The first ``count`` messages of ``topic`` on ``cluster``, read from its start (waits
    for replication; fails after 60 s)."""
    raw = pulsar.Client(refcluster.cluster_spec(cluster).url, logger=quiet())
    try:
        reader = raw.create_reader(topic, pulsar.MessageId.earliest)
        return [m.data() for m in take(ReadNext(reader), count)]
    finally:
        raw.close()


class ReadNext:
    """A reader as ``take`` reads a consumer."""

    def __init__(self, reader: pulsar.Reader) -> None:
        self._reader = reader

    def receive(self, timeout_millis: int) -> pulsar.Message:
        return self._reader.read_next(timeout_millis)


def test_a_chunked_message_is_handed_out_once_replicated_and_filtered_after_a_switch(
    refcluster: RefCluster, client: Client, center: ConfigCenter
) -> None:
    """The consumer subscribes once the message is stored: a consumer that waits for it live may
    never get it from the reference broker (docs/refcluster.md). The replicator copies it in
    chunks; another topic's messages are copied meanwhile (a message too big for one send used
    to fail every round of the flow)."""
    u = uuid.uuid4().hex[:8]
    topic, small = f"persistent://public/default/chunk-{u}", f"persistent://public/default/chunk-{u}-small"
    replicated(refcluster, topic, small)
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    producer.send(b"before")
    assert stored_on(refcluster, "pulsar-b", topic, 1) == [b"before"]  # the replicator reads the topic live now
    for content in (PAYLOAD, b"after"):
        producer.send(content)
    producer.close()
    other = client.create_producer(small)
    other.send(b"small")
    other.close()
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    got = take(consumer, 3)
    # Each once; the reference broker may dispatch the chunked message after a later one (it
    # dispatches large entries again, docs/refcluster.md), so the order is not the point here.
    assert sorted(m.data() for m in got) == sorted([b"before", PAYLOAD, b"after"])
    assert sorted(identity_of(m).sequence for m in got) == [0, 1, 2]  # type: ignore[union-attr]
    for m in got:
        consumer.acknowledge(m)
    assert stored_on(refcluster, "pulsar-b", small, 1) == [b"small"]
    assert stored_on(refcluster, "pulsar-b", topic, 3) == [b"before", PAYLOAD, b"after"]
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    client.create_producer(topic).send(b"on-b")
    assert [m.data() for m in take(consumer, 1)] == [b"on-b"], "pulsar-b's copies were filtered"
    assert nothing_more(consumer, within=1.5) == []
    assert consumer.filtered >= 3
    fresh = client.subscribe(topic, "fresh", initial_position=pulsar.InitialPosition.Earliest)
    assert sorted(m.data() for m in take(fresh, 4)) == sorted([b"before", PAYLOAD, b"after", b"on-b"])
