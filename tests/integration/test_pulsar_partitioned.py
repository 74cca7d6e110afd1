"""The Pulsar facade on partitioned topics, on a reference cluster of its own whose brokers
create every topic with 3 partitions (pulsar-lite does either, see docs/refcluster.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.partitioner import Partitioner
from hotstandby.refcluster import Ports, RefCluster
from tests.integration.pulsar_helpers import acknowledge_until, take
from tests.support import wait_for

PARTITIONS = 3


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    with RefCluster(
        tmp_path_factory.mktemp("refcluster-partitioned"), Ports.free(), pulsar_partitions=PARTITIONS
    ) as rc:  # up ... down; fmt: skip
        yield rc


def test_partitions_chosen_by_key_sequences_per_partition_and_a_switch(partitioned: RefCluster) -> None:
    namespace = f"/hs-test-{uuid.uuid4().hex[:10]}"
    partitioned.register(namespace)
    topic = f"persistent://public/default/part-{uuid.uuid4().hex[:8]}"
    with ConfigCenter.open(replace(partitioned.settings())) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            center.register_topic(cluster, topic)
    client = Client("payments", etcd=f"127.0.0.1:{partitioned.ports.etcd}", namespace=namespace,
                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    try:
        assert len(client.get_topic_partitions(topic)) == PARTITIONS
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
        producer = client.create_producer(topic)
        for i in range(90):
            producer.send_async(f"a{i}".encode(), None, partition_key=f"k{i % 9}")
        producer.flush()
        got = take(consumer, 90)
        expected = Partitioner("java-string")
        by_partition: dict[int, list[int]] = {}
        for m in got:
            rid = identity_of(m)
            assert rid is not None
            key = m.partition_key()
            assert rid.partition == m.message_id().partition() == expected.partition(topic, key.encode(), PARTITIONS)
            assert m.topic_name() == f"{topic}-partition-{rid.partition}"
            by_partition.setdefault(rid.partition, []).append(rid.sequence)
        for partition, seqs in by_partition.items():
            assert sorted(seqs) == list(range(len(seqs))), f"partition {partition}: contiguous sequences"
        for m in got[:60]:
            consumer.acknowledge(m)
        center_ns = ConfigCenter.open(replace(partitioned.settings(), namespace=namespace))
        try:
            center_ns.switch("payments", "pulsar-b", reason="test")
        finally:
            center_ns.close()
        wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
        for i in range(30):
            producer.send_async(f"b{i}".encode(), None, partition_key=f"k{i % 9}")
        producer.flush()
        wanted = {m.data().decode() for m in got[60:]} | {f"b{i}" for i in range(30)}
        later = acknowledge_until(consumer, wanted)
        assert not {m.data().decode() for m in got[:60]} & set(later), "acknowledged, handed out again"
        assert len(later) == len(set(later))
    finally:
        client.close()


def test_use_single_partition_sends_unkeyed_messages_to_one_partition(partitioned: RefCluster) -> None:
    namespace = f"/hs-test-{uuid.uuid4().hex[:10]}"
    partitioned.register(namespace)
    topic = f"persistent://public/default/single-{uuid.uuid4().hex[:8]}"
    client = Client("payments", etcd=f"127.0.0.1:{partitioned.ports.etcd}", namespace=namespace,
                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition)
        for i in range(12):
            producer.send_async(f"m{i}".encode(), None)
        producer.send(b"keyed", partition_key="k3")
        got = take(consumer, 13)
        unkeyed = {m.message_id().partition() for m in got if m.data() != b"keyed"}
        assert len(unkeyed) == 1, "one partition for the messages without a key"
        keyed = next(m for m in got if m.data() == b"keyed")
        assert keyed.message_id().partition() == Partitioner("java-string").partition(topic, b"k3", PARTITIONS)
        for m in got:
            consumer.acknowledge(m)
    finally:
        client.close()
