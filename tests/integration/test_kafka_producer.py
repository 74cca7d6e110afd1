"""The Kafka producer facade across route flips, on the reference cluster."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from typing import Any

import pytest

from hotstandby.adapters.kafka import Producer
from hotstandby.adapters.kafka.mm2.replication_progress import read_positions
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigError, UnknownRouteError
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.refcluster import RefCluster
from tests.integration.conftest import etcd_args
from tests.integration.kafka_helpers import create_topic, read_all, route_config
from tests.integration.kafka_helpers import topics as all_topics
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def values_on(rc: RefCluster, cluster: str, topics: list[str], partitions: int) -> dict[bytes, set[RecordId]]:
    """value -> the hs-ids it was stored with, over the given topics of one cluster."""
    spec = rc.cluster_spec(cluster)
    found: dict[bytes, set[RecordId]] = {}
    existing = all_topics(spec)
    for topic in (t for t in topics if t in existing):  # a remote copy may never have been made
        for p in range(partitions):
            for msg in read_all(spec, topic, p):
                rid = RecordId.decode(dict(msg.headers() or [])[HEADER])
                assert rid.partition == p, "a record must stay in the partition its hs-id names"
                found.setdefault(msg.value() or b"", set()).add(rid)
    return found


def once_on_b(rc: RefCluster, topic: str, values: set[bytes]) -> None:
    """Every value reaches kafka-b (2 partitions; produced there or copied from kafka-a), each
    with one identity: a record sent twice keeps it, so consumers filter the second copy."""
    on_b = wait_for(
        lambda: (f := values_on(rc, "kafka-b", [topic, f"kafka-a.{topic}"], 2)).keys() >= values and f,
        60, "every record on kafka-b",
    )  # fmt: skip
    assert all(len(rids) == 1 for rids in on_b.values())


class Deliveries:
    """Counts delivery reports per record value (reports carry no headers)."""

    def __init__(self) -> None:
        self.ok: dict[bytes, int] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, err: Any, msg: Any) -> None:
        with self.lock:
            if err is not None:
                self.errors.append(str(err))
                return
            self.ok[msg.value()] = self.ok.get(msg.value(), 0) + 1


def test_bootstrap_servers_and_unknown_routes_are_refused(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    with pytest.raises(ConfigError, match="must not be set"):
        Producer({**route_config(refcluster, namespace), "bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(UnknownRouteError):
        Producer(route_config(refcluster, namespace, **{"hotstandby.route": "nope"}))
    with pytest.raises(ConfigError, match="is pulsar"):
        Producer(route_config(refcluster, namespace, **{"hotstandby.route": "payments"}))


def test_planned_switch_moves_the_producer_and_every_record_arrives_once_reported(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"p-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 4)
    deliveries = Deliveries()
    producer = Producer(route_config(refcluster, namespace))
    try:
        assert producer.cluster == "kafka-a"
        for i in range(3000):
            producer.produce(topic, key=f"k{i}", value=f"v{i}", on_delivery=deliveries)
            if i == 1500:
                center.switch("orders", "kafka-b", reason="planned")
            if i % 100 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
        wait_for(lambda: producer.cluster == "kafka-b", 30, "the producer to move to kafka-b")
    finally:
        producer.close()
    assert deliveries.errors == []
    assert len(deliveries.ok) == 3000 and set(deliveries.ok.values()) == {1}, "on_delivery must fire once per record"

    # Everything is on kafka-b: produced there, or replicated from kafka-a.
    def everything_on_b() -> dict[bytes, set[RecordId]] | None:
        found = values_on(refcluster, "kafka-b", [topic, f"kafka-a.{topic}"], 4)
        return found if found.keys() >= deliveries.ok.keys() else None

    on_b = wait_for(everything_on_b, 60, "every record on kafka-b")
    assert set(on_b) == set(deliveries.ok)
    # A record sent twice (re-sent in the switch) keeps one identity: consumers can filter the copy.
    assert all(len(rids) == 1 for rids in on_b.values())


def test_primary_killed_records_are_resent_and_replayed_to_the_survivor(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """kafka-a dies with SIGKILL (memory storage: everything on it is gone, replicated or not);
    after the flip the producer re-sends what was pending and replays its window."""
    topic = f"k-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    deliveries = Deliveries()
    producer = Producer(route_config(refcluster, namespace, **{"message.timeout.ms": 120_000}))
    try:
        for i in range(2000):
            producer.produce(topic, value=f"v{i}", on_delivery=deliveries)
            producer.poll(0)
            if i == 1000:
                producer.flush(30)
                refcluster.kill("kafka-a", signal.SIGKILL)
                center.switch("orders", "kafka-b", reason="kafka-a lost")
        assert producer.flush(90) == 0
        resent = producer.resent + producer.trimmed
    finally:
        producer.close()
        refcluster.restart("kafka-a")  # empty, as after losing a data centre; later tests need it
    assert deliveries.errors == []
    assert len(deliveries.ok) == 2000 and set(deliveries.ok.values()) == {1}
    on_b = values_on(refcluster, "kafka-b", [topic, f"kafka-a.{topic}"], 2)
    missing = set(deliveries.ok) - set(on_b)
    assert not missing, f"{len(missing)} acknowledged records are not on the survivor"
    assert all(len(rids) == 1 for rids in on_b.values())
    assert resent >= 1000, "acknowledged records of the replay window must be sent again (or be proven replicated)"
    # Re-sent records come first on the survivor, in their original order, then the new ones.
    for p in range(2):
        sequences = [RecordId.decode(dict(m.headers() or [])[HEADER]).sequence
                     for m in read_all(refcluster.cluster_spec("kafka-b"), topic, p)]  # fmt: skip
        assert sequences, f"nothing was sent to {topic}[{p}] on the survivor"
        # (a retried request may store a record twice; its first copy is in place)
        assert list(dict.fromkeys(sequences)) == sorted(set(sequences)), f"{topic}[{p}]: out of order"


def test_planned_switch_leaves_out_of_the_replay_what_replication_copied(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """Records MM2's position on kafka-b shows copied (written after they were acknowledged,
    beyond the skew margin) are not re-sent; the rest of the window is, and nothing is missing."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    deliveries = Deliveries()
    producer = Producer(route_config(refcluster, namespace, **{"hotstandby.timestamp.skew.ms": 200}))
    b, link = refcluster.cluster_spec("kafka-b"), center.links()[("kafka-a", "kafka-b")]
    try:
        for i in range(500):
            producer.produce(topic, value=f"v{i}", on_delivery=deliveries)
            producer.poll(0)
        assert producer.flush(30) == 0
        acked_ms = int(time.time() * 1000)
        ends = {p: len(read_all(refcluster.cluster_spec("kafka-a"), topic, p)) for p in range(2)}
        extra = iter(range(500, 10_000))

        def first_batch_proven_copied() -> bool:
            # Keep records flowing so that the replicator keeps writing its position.
            producer.produce(topic, value=f"v{next(extra)}", on_delivery=deliveries)
            producer.flush(5)
            positions = read_positions(b, link, timeout=10)
            return all(
                (pos := positions.get((topic, p))) is not None
                and pos.written_ms > acked_ms + 200
                and pos.offset >= ends[p] - 1
                for p in range(2)
            )

        wait_for(first_batch_proven_copied, 60, "the replicator's position on kafka-b to cover the first 500")
        center.switch("orders", "kafka-b", reason="planned")
        wait_for(lambda: producer.cluster == "kafka-b", 30, "the producer to move to kafka-b")
        for i in range(10_000, 10_100):
            producer.produce(topic, value=f"v{i}", on_delivery=deliveries)
        assert producer.flush(30) == 0
        trimmed, resent = producer.trimmed, producer.resent
    finally:
        producer.close()
    assert deliveries.errors == []
    assert trimmed >= 500, f"only {trimmed} records left out of the replay"
    assert resent < len(deliveries.ok) - 500
    once_on_b(refcluster, topic, set(deliveries.ok))


def test_flipped_back_and_forth_a_record_is_sent_to_each_cluster_once(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A switch re-sends the replay window to kafka-b; flipped back to kafka-a and to kafka-b
    again, the producer sends nothing more: each cluster still holds what it acknowledged."""
    topic = f"f-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    deliveries = Deliveries()
    # No replication position proves anything within the test: every switch would re-send.
    producer = Producer(route_config(refcluster, namespace, **{"hotstandby.timestamp.skew.ms": 600_000}))
    try:
        for i in range(300):
            producer.produce(topic, value=f"v{i}", on_delivery=deliveries)
            producer.poll(0)
        assert producer.flush(30) == 0
        for to in ("kafka-b", "kafka-a", "kafka-b"):
            center.switch("orders", to, reason="flapping")
            wait_for(lambda to=to: producer.cluster == to, 30, f"the producer to move to {to}")
            assert producer.flush(30) == 0
        resent = producer.resent
    finally:
        producer.close()
    assert deliveries.errors == []
    assert len(deliveries.ok) == 300 and set(deliveries.ok.values()) == {1}
    assert resent == 300, "re-sent to kafka-b once, never again to a cluster that holds them"
    for cluster in ("kafka-a", "kafka-b"):
        stored = [m.value() for p in range(2) for m in read_all(refcluster.cluster_spec(cluster), topic, p)]
        assert sorted(stored) == sorted(deliveries.ok), f"each record once in {topic} on {cluster}"


def test_presence_shows_the_producer_on_its_cluster_and_vanishes_on_close(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hotstandby.cli import main as cli_main
    from hotstandby.logs import configure

    configure("warning")  # background threads' log lines go to stderr, not into the JSON on stdout

    def status() -> dict[str, Any]:
        capsys.readouterr()
        assert cli_main(["status", "orders", "--json", *etcd_args(refcluster, namespace)]) == 0
        return json.loads(capsys.readouterr().out)

    topic = f"pr-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    producer = Producer(route_config(refcluster, namespace, **{"hotstandby.client.id": "billing-1"}))
    try:
        # Written by the presence thread as it starts: creating the producer does not wait for it.
        first = wait_for(lambda: (found := status())["clients"] and found, 10, "the producer's presence")
        assert first["clients_per_cluster"] == {"kafka-a": 1, "kafka-b": 0}
        [client] = first["clients"]
        assert (client["client"], client["role"], client["epoch"], client["state"]) == (
            "billing-1",
            "producer",
            1,
            "active",
        )
        center.switch("orders", "kafka-b")
        wait_for(
            lambda: status()["clients_per_cluster"] == {"kafka-a": 0, "kafka-b": 1}, 30, "presence to follow the switch"
        )
        [moved] = status()["clients"]
        assert moved["epoch"] == 2 and moved["switches"] == 1 and moved["last_switch_ms"] is not None
    finally:
        producer.close()
    assert status()["clients"] == [], "a closed client revokes its lease"


def test_a_produce_loop_across_three_flips_one_with_the_broker_killed_never_gets_buffer_error(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """produce() + poll(0), flush() every 500: with a queue of 1 000 the raw client never
    raises BufferError here; the SDK's re-send of its replay window (thousands of records)
    must not take the application's queue space either."""
    topic = f"q-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    deliveries = Deliveries()
    producer = Producer(route_config(refcluster, namespace, **{"queue.buffering.max.messages": 1000,
                                                                 "message.timeout.ms": 30_000}))  # fmt: skip
    flips = {2000: ("kafka-b", False), 4000: ("kafka-a", False), 6000: ("kafka-b", True)}
    count, killed = 8000, False
    try:
        for i in range(count):
            producer.produce(topic, value=f"v{i}", on_delivery=deliveries)  # no try/except, as users write it
            producer.poll(0)
            if i % 500 == 499:
                producer.flush()
            if i in flips:
                to, kill = flips[i]
                if kill:
                    refcluster.kill("kafka-a", signal.SIGKILL)
                    killed = True
                center.switch("orders", to, reason=f"to {to}")
                wait_for(lambda: producer.cluster == to, 30, f"the producer to move to {to}")  # noqa: B023
        assert producer.flush(60) == 0
    finally:
        producer.close()
        if killed:
            refcluster.restart("kafka-a")
    assert deliveries.errors == []
    assert len(deliveries.ok) == count and set(deliveries.ok.values()) == {1}
    once_on_b(refcluster, topic, set(deliveries.ok))


def test_a_producer_follows_a_valid_flip_within_2_s_after_a_poisoned_route_value(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    producer = Producer(route_config(refcluster, namespace))
    try:
        assert producer.cluster == "kafka-a"
        # 10 KB of '[' under the route (it stopped the watcher for good: later flips never came).
        center.store.put(center.keys.route("orders"), b"[" * 10_000)
        flipped_at = time.monotonic()
        center.switch("orders", "kafka-b")
        wait_for(lambda: producer.cluster == "kafka-b", 2.0, "the producer on kafka-b within 2 s of the flip")
        with capsys.disabled():
            print(f"\n[measure] producer on kafka-b {(time.monotonic() - flipped_at) * 1000:.0f} ms after the flip")
    finally:
        producer.close()
