"""The Kafka consumer while etcd is down: it keeps polling and committing without raising,
keeps its acknowledgements (they filter locally) and stores them once etcd is back."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.etcd_kill import kill_etcd
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.kafka_helpers import producer as raw_producer

OUTAGE_S = 15.0
SESSION = b"\x0e" * 16


def produce(rc: RefCluster, topic: str, first: int, count: int) -> None:
    """Records ``r<first>`` ... with identities, written by the raw client (etcd is not needed)."""
    raw = raw_producer(rc.cluster_spec("kafka-a"))
    for seq in range(first, first + count):
        raw.produce(topic, value=f"r{seq}".encode(), partition=seq % 2,
                    headers=[(HEADER, RecordId(SESSION, seq % 2, seq).encode())])  # fmt: skip
    assert raw.flush(30) == 0


def poll_until(consumer: Consumer, got: list[str], wanted: int, timeout: float) -> None:
    """Poll (no try/except: nothing may raise) until ``wanted`` records arrived."""
    deadline = time.monotonic() + timeout
    while len(got) < wanted:
        assert time.monotonic() < deadline, f"{len(got)} of {wanted} records within {timeout} s"
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())


def stored_count(center: ConfigCenter, group: str, topic: str) -> int:
    store = LedgerStore(center)
    return sum(len(store.load(group, topic, p).ledger) for p in range(2))


def test_etcd_killed_under_a_polling_consumer_raises_nothing_and_loses_nothing(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"e-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    produce(refcluster, topic, 0, 100)
    config = route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200})
    consumer = Consumer(config)
    got: list[str] = []
    try:
        consumer.subscribe([topic])
        poll_until(consumer, got, 100, 60)
        kill_etcd(refcluster)
        killed = time.monotonic()
        try:
            produce(refcluster, topic, 100, 150)
            poll_until(consumer, got, 250, OUTAGE_S)  # auto commit every 200 ms meanwhile
            assert consumer.commit(asynchronous=True) is None
            # A synchronous commit reports what confluent_kafka reports when it cannot commit.
            started = time.monotonic()
            with pytest.raises(KafkaException) as failed:
                consumer.commit(asynchronous=False)
            assert failed.value.args[0].code() == KafkaError._TIMED_OUT
            assert time.monotonic() - started < 10, "within the etcd timeout (5 s) and a bit"
            while time.monotonic() < killed + OUTAGE_S:  # keep polling through the outage
                assert consumer.poll(0.1) is None, "nothing more was produced"
        finally:
            refcluster.restart("etcd")
        produce(refcluster, topic, 250, 50)
        poll_until(consumer, got, 300, 60)
        # Everything acknowledged during the outage reaches etcd once it answers (auto commit,
        # which runs in poll).
        deadline = time.monotonic() + 30
        while stored_count(center, group, topic) < 300:
            assert time.monotonic() < deadline, f"stored {stored_count(center, group, topic)} of 300 within 30 s"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"r{i}" for i in range(300)), "lost or duplicated"
    # Lose the broker's committed offsets: the stored ledger alone filters all 300.
    admin = AdminClient({"bootstrap.servers": refcluster.cluster_spec("kafka-a").url})
    reset = [TopicPartition(topic, p, 0) for p in range(2)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, reset)])[group].result(10)
    again = Consumer(config)
    repeated: list[str] = []
    try:
        again.subscribe([topic])
        deadline = time.monotonic() + 60
        while again.filtered < 300 and time.monotonic() < deadline:
            msg = again.poll(0.2)
            if msg is not None and msg.error() is None:
                repeated.append(msg.value().decode())
    finally:
        again.close()
    assert repeated == [], "acknowledged during the outage, handed out again"
    assert again.filtered >= 300
