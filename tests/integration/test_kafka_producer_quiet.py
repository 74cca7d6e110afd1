"""A Kafka producer given no delivery callback (its quiet path, docs/kafka-api.md): records
placed by markers, kept across a killed primary, and a record refused for good."""

from __future__ import annotations

import signal
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, read_all, route_config
from tests.integration.test_kafka_producer import once_on_b
from tests.support import capture_logs

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def _compacted_topic(rc: RefCluster) -> tuple[str, ClusterSpec]:
    """A new compacted topic of one partition on kafka-a: it refuses a record without a key."""
    topic = f"compact-{uuid.uuid4().hex[:8]}"
    spec = rc.cluster_spec("kafka-a")
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(10)
    return topic, spec


def test_records_produced_without_callbacks_are_placed_by_markers_and_survive_a_killed_primary(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A producer given no delivery callback gets a report for a few records only (markers);
    each record's place on kafka-a is known to lie between the previous marker's offset and
    its marker's; after kafka-a dies and the route flips, every record is on kafka-b once."""
    topic = f"q-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    values = [f"q{i}".encode() for i in range(3000)]
    producer = Producer(route_config(refcluster, namespace))
    try:
        for i, value in enumerate(values[:1500]):
            producer.produce(topic, value=value)
            if i % 100 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0 and len(producer) == 0
        with producer._s.lock:  # where the window says each record lies, against where it does
            placed = {(r.partition, r.sequence): st for _, r, st in producer._s.outbox.window_stored() if st}
        offsets = {(p, RecordId.decode(dict(m.headers() or [])[HEADER]).sequence): m.offset()
                   for p in range(2) for m in read_all(refcluster.cluster_spec("kafka-a"), topic, p)}  # fmt: skip
        assert len(offsets) == 1500 and placed, "markers placed records"
        misplaced = {k: (st.lowest, offsets[k], st.offset) for k, st in placed.items()
                     if not st.lowest <= offsets[k] <= st.offset}  # fmt: skip
        assert not misplaced, f"records outside their span: {list(misplaced.items())[:3]}"
        refcluster.kill("kafka-a", signal.SIGKILL)
        center.switch("orders", "kafka-b", reason="kafka-a lost")
        for i, value in enumerate(values[1500:]):
            producer.produce(topic, value=value)
            if i % 100 == 0:
                producer.poll(0)
        assert producer.flush(90) == 0
        assert producer.cluster == "kafka-b" and producer.resent >= 1
    finally:
        producer.close()
        refcluster.restart("kafka-a")  # later tests need it
    once_on_b(refcluster, topic, set(values))


@pytest.mark.real_tier_only  # the lite broker takes a record without a key on a compacted topic
def test_a_record_refused_for_good_without_a_callback_is_dropped_loudly_and_the_producer_goes_on(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """Under the gapless guarantee a refused record is fatal for the raw producer: the SDK
    connects again to the same cluster, sends the pending records again (each with a report),
    logs the refused one, and keeps producing, where confluent-kafka would drop it silently."""
    topic, spec = _compacted_topic(refcluster)
    producer = Producer(route_config(refcluster, namespace))
    try:
        with capture_logs() as logs:
            for i in range(100):
                producer.produce(topic, key=f"k{i}", value=f"v{i}")
            assert producer.flush(30) == 0
            producer.produce(topic, value=b"no key")  # a compacted topic refuses it (INVALID_RECORD)
            assert producer.flush(30) == 0, "the refused record is not left pending"
            for i in range(100, 200):
                producer.produce(topic, key=f"k{i}", value=f"v{i}")
            assert producer.flush(30) == 0
    finally:
        producer.close()
    stored = {m.value() for m in read_all(spec, topic, 0)}
    assert stored == {f"v{i}".encode() for i in range(200)}
    events = [e["event"] for e in logs]
    assert "producer.reconnected" in events and "producer.record_refused" in events, events


@pytest.mark.real_tier_only  # the lite broker takes a record without a key on a compacted topic
def test_connections_that_keep_failing_turn_the_quiet_path_off(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """Three connections in a row that fail before storing anything (here: each is given a
    record the broker refuses) and the producer reports every record from then on, on a raw
    producer with the application's own settings; it keeps producing."""
    topic, spec = _compacted_topic(refcluster)
    producer = Producer(route_config(refcluster, namespace))
    try:
        with capture_logs() as logs:
            for _ in range(3):
                producer.produce(topic, value=b"no key")
                assert producer.flush(30) == 0
            assert producer._s.quiet is None, [e["event"] for e in logs]
            for i in range(50):
                producer.produce(topic, key=f"k{i}", value=f"v{i}")
            assert producer.flush(30) == 0
    finally:
        producer.close()
    assert {m.value() for m in read_all(spec, topic, 0)} == {f"v{i}".encode() for i in range(50)}
    assert [e["event"] for e in logs].count("producer.quiet_off") == 1
