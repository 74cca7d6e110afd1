"""Kafka transactions through the facade Producer, on the reference cluster (Tansu 0.6.0 runs
init_transactions, AddPartitionsToTxn, EndTxn and fencing, and holds read_committed readers at
an open transaction; it does not hide an aborted transaction's records from them, so these
tests read what the SDK sent, never what an abort hides: docs/kafka-api.md)."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, producer, route_config
from tests.integration.process_pause import Paused
from tests.support import wait_for

PARTITIONS = 2


def visible(spec: ClusterSpec, topic: str, *, timeout: float = 30.0) -> dict[str, RecordId | None]:
    """value -> hs-id (None: written by a raw producer) of every record a read_committed reader
    of ``topic`` sees now (read to the end of each partition)."""
    consumer = Consumer({"bootstrap.servers": spec.url, "group.id": "__hs-test-txn-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        found: dict[str, RecordId | None] = {}
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_end) < PARTITIONS:
            assert time.monotonic() < deadline, f"{topic}: not read to the end within {timeout} s"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, f"reading {topic}: {err}"
                at_end.add(msg.partition() or 0)
                continue
            at_end.discard(msg.partition() or 0)
            rid = dict(msg.headers() or []).get(HEADER)
            found[(msg.value() or b"").decode()] = RecordId.decode(rid) if rid else None
        return found
    finally:
        consumer.close()


class Reports:
    """Delivery reports per record value: errors by name, successes as None."""

    def __init__(self) -> None:
        self.by_value: dict[str, list[str | None]] = {}
        self.lock = threading.Lock()

    def __call__(self, err: KafkaError | None, msg: Any) -> None:
        with self.lock:
            self.by_value.setdefault(msg.value().decode(), []).append(err.name() if err else None)


def txn_producer(rc: RefCluster, namespace: str, **extra: Any) -> Producer:
    return Producer(route_config(rc, namespace, **{"transactional.id": f"tx-{uuid.uuid4().hex[:8]}", **extra}))


def topic_on_both(rc: RefCluster, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(rc.cluster_spec(cluster), topic, PARTITIONS)
    return topic


def test_committed_and_aborted_transactions_and_a_switch_replays_only_the_committed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = topic_on_both(refcluster, "tx")
    reports = Reports()
    p = txn_producer(refcluster, namespace)
    try:
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"c{i}", on_delivery=reports)
        p.commit_transaction(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"a{i}", on_delivery=reports)
        assert p.flush(30) == 0  # delivered (and reported), then aborted
        p.abort_transaction(30)
        on_a = visible(refcluster.cluster_spec("kafka-a"), topic)
        assert {f"c{i}" for i in range(10)} <= on_a.keys()

        center.switch("orders", "kafka-b", reason="planned")
        wait_for(lambda: p.cluster == "kafka-b", 30, "the producer to move to kafka-b")
        assert p.flush(30) == 0
        assert p.resent + p.trimmed == 10, "the window holds the committed transaction's records only"
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, key=f"k{i}", value=f"n{i}", on_delivery=reports)
        p.commit_transaction(30)
        resent = p.resent
    finally:
        p.close()
    on_b = wait_for(lambda: (v := visible(refcluster.cluster_spec("kafka-b"), topic)).keys() >= {f"n{i}" for i in range(5)} and v,
                    30, "the new transaction on kafka-b")  # fmt: skip
    assert not {v for v in on_b if v.startswith("a")}, "an aborted transaction's records are never sent again"
    replayed = {v for v in on_b if v.startswith("c")}
    assert len(replayed) == resent, "the replay is committed on kafka-b (read_committed sees it)"
    assert all(on_b[v] == on_a[v] for v in replayed), "replayed with the same identity"
    assert {v: r for v, r in reports.by_value.items() if r != [None]} == {}, "one report per record"


def test_a_switch_mid_transaction_makes_it_abortable_and_the_retry_loop_commits_on_the_new_cluster(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_on_both(refcluster, "txs")
    reports = Reports()
    p = txn_producer(refcluster, namespace)
    errors: list[KafkaError] = []
    flipped_at: list[float] = []

    def produce_all(attempt: int, midway: Callable[[], None]) -> None:
        for i in range(20):
            p.produce(topic, key=f"k{i}", value=f"v{i}@{attempt}", on_delivery=reports)
            if i == 9:
                midway()

    def flip() -> None:
        p.flush(30)
        p.produce(topic, key="k-last", value="queued@1", on_delivery=reports)  # maybe delivered, maybe not
        flipped_at.append(time.monotonic())
        center.switch("orders", "kafka-b", reason="planned")
        wait_for(lambda: p.cluster == "kafka-b", 30, "the producer to move to kafka-b")

    try:
        p.init_transactions(30)
        attempt = 0
        while True:  # confluent-kafka's transaction loop, as applications write it
            attempt += 1
            p.begin_transaction()
            try:
                produce_all(attempt, flip if attempt == 1 else lambda: None)
                p.commit_transaction(30)
                break
            except KafkaException as exc:
                errors.append(exc.args[0])
                if not exc.args[0].txn_requires_abort():
                    raise
                # commit_transaction raises the same abortable error before the abort
                try:
                    p.commit_transaction(30)
                except KafkaException as again:
                    errors.append(again.args[0])
                p.abort_transaction(30)
        assert attempt == 2
        with capsys.disabled():
            print(f"\n[measure] flip -> the retried transaction committed on kafka-b: "
                  f"{(time.monotonic() - flipped_at[0]) * 1000:.0f} ms")  # fmt: skip
    finally:
        p.close()
    assert len(errors) == 2
    for err in errors:
        assert (err.txn_requires_abort(), err.fatal(), err.retriable()) == (True, False, False)
        assert "moved from kafka-a to kafka-b" in err.str()
    on_b = wait_for(lambda: (v := visible(refcluster.cluster_spec("kafka-b"), topic)) and len(v) >= 20 and v,
                    30, "the second attempt on kafka-b")  # fmt: skip
    assert set(on_b) == {f"v{i}@2" for i in range(20)}, "only the committed attempt, none of the aborted one"
    # Each record had one report: attempt 1's first ten were delivered, the queued one either
    # delivered or purged by the abort (as confluent-kafka's abort_transaction reports it).
    assert all(reports.by_value[f"v{i}@1"] == [None] for i in range(10))
    assert reports.by_value["queued@1"] in ([None], ["_PURGE_QUEUE"])
    assert all(reports.by_value[f"v{i}@2"] == [None] for i in range(20))
    assert len(reports.by_value) == 31

    # The transaction left on kafka-a was aborted there: read_committed readers go past it at
    # once (left open, it would hold them until transaction.timeout.ms, 60 s).
    raw = producer(refcluster.cluster_spec("kafka-a"))
    raw.produce(topic, key="k0", value=b"after")
    assert raw.flush(10) == 0
    wait_for(lambda: "after" in visible(refcluster.cluster_spec("kafka-a"), topic), 20, "kafka-a past the aborted one")


def test_committed_transactions_survive_the_loss_of_their_cluster(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """kafka-a dies (SIGKILL, memory storage: all it had is gone); the switch replays the
    committed transactions of the window to kafka-b in one transaction, same identities."""
    topic = topic_on_both(refcluster, "txk")
    p = txn_producer(refcluster, namespace, **{"message.timeout.ms": 60_000})
    killed = False
    try:
        p.init_transactions(30)
        for t in range(3):
            p.begin_transaction()
            for i in range(10):
                p.produce(topic, key=f"k{i}", value=f"t{t}-{i}")
            p.commit_transaction(30)
        on_a = visible(refcluster.cluster_spec("kafka-a"), topic)
        refcluster.kill("kafka-a", signal.SIGKILL)
        killed = True
        center.switch("orders", "kafka-b", reason="kafka-a lost")
        wait_for(lambda: p.cluster == "kafka-b", 60, "the producer to move to kafka-b")
        assert p.flush(60) == 0
        p.begin_transaction()  # waits for the replay's transaction, then runs on kafka-b
        p.produce(topic, key="k0", value="after")
        p.commit_transaction(30)
    finally:
        p.close()
        if killed:
            refcluster.restart("kafka-a")  # empty, as after losing a data centre; later tests need it
    assert len(on_a) == 30
    on_b = wait_for(lambda: (v := visible(refcluster.cluster_spec("kafka-b"), topic)).keys() >= {*on_a, "after"} and v,
                    30, "every committed record on kafka-b")  # fmt: skip
    assert all(on_b[v] == rid for v, rid in on_a.items()), "replayed with the same identity"


def test_a_transaction_open_on_a_cluster_that_died_is_left_there_and_the_producer_moves_on(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """kafka-a dies with a transaction open: the switch cannot abort it there, and must not
    wait for it (confluent-kafka's close() would, without limit): the application's retry
    commits on kafka-b, and a later switch back to kafka-a runs."""
    topic = topic_on_both(refcluster, "txd")
    p = txn_producer(refcluster, namespace)
    killed = False
    try:
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"x{i}@1")
        assert p.flush(30) == 0
        refcluster.kill("kafka-a", signal.SIGKILL)
        killed = True
        center.switch("orders", "kafka-b", reason="kafka-a lost")
        wait_for(lambda: p.cluster == "kafka-b", 60, "the producer to move to kafka-b")
        try:
            p.produce(topic, key="k0", value="x@1")
            raise AssertionError("produce in a transaction the switch ended must raise")
        except KafkaException as exc:
            assert exc.args[0].txn_requires_abort()
        p.abort_transaction(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"x{i}@2")
        p.commit_transaction(30)

        refcluster.restart("kafka-a")  # empty, as after losing a data centre
        killed = False
        create_topic(refcluster.cluster_spec("kafka-a"), topic, PARTITIONS)
        center.switch("orders", "kafka-a", reason="kafka-a back")
        wait_for(lambda: p.cluster == "kafka-a", 30, "the producer back on kafka-a (its switcher is not stuck)")
        p.begin_transaction()
        p.produce(topic, key="k0", value="back")
        p.commit_transaction(30)
    finally:
        p.close()
        if killed:
            refcluster.restart("kafka-a")
    on_b = visible(refcluster.cluster_spec("kafka-b"), topic)
    assert set(on_b) == {f"x{i}@2" for i in range(10)}
    on_a = wait_for(lambda: (v := visible(refcluster.cluster_spec("kafka-a"), topic)) and "back" in v and v, 30,
                    "the transaction after the failback on kafka-a")  # fmt: skip
    assert {f"x{i}@2" for i in range(10)} <= set(on_a), "the window's committed records, replayed to kafka-a"


def test_a_commit_left_without_answer_is_carried_to_the_new_cluster_and_then_reported_committed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """kafka-a stops answering (SIGSTOP) once the records are delivered: commit_transaction
    times out (retriable, outcome unknown). The switch re-sends the transaction's records to
    kafka-b in its replay transaction, so the application's retried commit_transaction
    returns: the records are committed on kafka-b, once, with their identities."""
    topic = topic_on_both(refcluster, "txc")
    reports = Reports()
    p = txn_producer(refcluster, namespace)
    broker = Paused(refcluster, "kafka-a")
    try:
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, key=f"k{i}", value=f"u{i}", on_delivery=reports)
        assert p.flush(30) == 0
        broker.pause()
        try:
            p.commit_transaction(2)
            raise AssertionError("commit_transaction must time out while kafka-a does not answer")
        except KafkaException as exc:
            assert exc.args[0].retriable() and not exc.args[0].txn_requires_abort()
        center.switch("orders", "kafka-b", reason="kafka-a does not answer")
        wait_for(lambda: p.cluster == "kafka-b", 60, "the producer to move to kafka-b")
        p.commit_transaction(30)  # the retry the application makes after a retriable error
        p.begin_transaction()
        p.produce(topic, key="k0", value="next", on_delivery=reports)
        p.commit_transaction(30)
    finally:
        broker.resume()
        p.close()
    on_b = wait_for(lambda: (v := visible(refcluster.cluster_spec("kafka-b"), topic)) and "next" in v and v, 30,
                    "the next transaction on kafka-b")  # fmt: skip
    assert set(on_b) == {*(f"u{i}" for i in range(10)), "next"}
    assert {v: r for v, r in reports.by_value.items() if r != [None]} == {}, "one report per record"
