"""A chunked message (10 MiB, more than a broker takes in one) through the Pulsar facade on
the reference cluster: handed out once, its copy filtered on the cluster switched to."""

from __future__ import annotations

import uuid

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, nothing_more, quiet, take
from tests.support import wait_for

PAYLOAD = bytes(range(256)) * (10 * 1024 * 1024 // 256)


def copy_to(refcluster: RefCluster, target: str, topic: str, messages: list[pulsar.Message]) -> None:
    """``messages`` (as the facade handed them out) written to ``target`` as replication leaves
    them: same content and properties, the identity among them, chunked as they came. Taken
    from what the consumer got, not read again from the source: the reference broker may hold
    a chunked message back from a reader (docs/refcluster.md), which is not what this shows."""
    out = pulsar.Client(refcluster.cluster_spec(target).url, logger=quiet())
    try:
        producer = out.create_producer(topic, chunking_enabled=True, batching_enabled=False)
        for m in messages:
            rid = identity_of(m)
            assert rid is not None
            producer.send(m.data(), properties={**m.properties(), HEADER: rid.text()})
        producer.close()
    finally:
        out.close()


def test_a_chunked_message_is_handed_out_once_and_its_copy_filtered_after_a_switch(
    refcluster: RefCluster, client: Client, center: ConfigCenter
) -> None:
    """The consumer subscribes once the message is stored: a consumer that waits for it live may
    never get it from the reference broker (docs/refcluster.md). The copies on pulsar-b are
    written by the test, as the replicator leaves them: the reference replicator's copying of
    chunked messages is left out of the suite, whose other Pulsar tests depend on its pace."""
    topic = f"persistent://public/default/chunk-{uuid.uuid4().hex[:8]}"
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    for content in (b"before", PAYLOAD, b"after"):
        producer.send(content)
    producer.close()
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    got = take(consumer, 3)
    # Each once; the reference broker may dispatch the chunked message after a later one (it
    # dispatches large entries again, docs/refcluster.md), so the order is not the point here.
    assert sorted(m.data() for m in got) == sorted([b"before", PAYLOAD, b"after"])
    assert sorted(identity_of(m).sequence for m in got) == [0, 1, 2]  # type: ignore[union-attr]
    for m in got:
        consumer.acknowledge(m)
    copy_to(refcluster, "pulsar-b", topic, got)
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    client.create_producer(topic).send(b"on-b")
    assert [m.data() for m in take(consumer, 1)] == [b"on-b"], "pulsar-b's copies were filtered"
    assert nothing_more(consumer, within=1.5) == []
    assert consumer.filtered >= 3
    fresh = client.subscribe(topic, "fresh", initial_position=pulsar.InitialPosition.Earliest)
    assert sorted(m.data() for m in take(fresh, 4)) == sorted([b"before", PAYLOAD, b"after", b"on-b"])
