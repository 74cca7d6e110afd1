"""The facade Producer's transaction state across a switch, where the reference cluster cannot
take it: a replay transaction the new cluster will not commit. Raw producers are stand-ins
that answer as confluent-kafka's do; the outbox is the real one. No processes."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka.producer.state import ProducerState, Record
from hotstandby.adapters.kafka.producer.transactions import Transactions
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.switch_protocol import SwitchPlan
from tests.support import capture_logs

ABORTABLE = KafkaError(KafkaError._TIMED_OUT, "1 message(s) timed out", txn_requires_abort=True)
RETRIABLE = KafkaError(KafkaError._TIMED_OUT, "Timed out waiting for operation to finish", retriable=True)


class Raw:
    """A transactional confluent_kafka.Producer stand-in: commit_transaction raises the
    errors queued in ``commit_errors``, then succeeds."""

    def __init__(self, commit_errors: list[KafkaError] | None = None) -> None:
        self.commit_errors = list(commit_errors or [])
        self.calls: list[str] = []

    def init_transactions(self, timeout: float = -1) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def commit_transaction(self, timeout: float = -1) -> None:
        self.calls.append("commit")
        if self.commit_errors:
            raise KafkaException(self.commit_errors.pop(0))

    def abort_transaction(self, timeout: float = -1) -> None:
        self.calls.append("abort")


class FakeProducer:
    """A producer's state as Transactions shares it, and the re-sends it asked for."""

    def __init__(self, inner: Raw) -> None:
        options, raw = ClientOptions.split({"hotstandby.route": "r", "hotstandby.client.id": "p-txn"}, role="producer")
        self.state = ProducerState(options, raw, max_pending=100, message_timeout_ms=1000)
        self.state.inner = inner  # type: ignore[assignment]
        self.sent: list[tuple[Raw, list[Record]]] = []

    def replay(self, client: Raw, records: list[Record]) -> None:
        self.sent.append((client, list(records)))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


PLAN = SwitchPlan(
    current=Route(name="r", active="kafka-a", clusters=("kafka-a", "kafka-b"), epoch=1),
    target=Route(name="r", active="kafka-b", clusters=("kafka-a", "kafka-b"), epoch=2),
    source=ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{_closed_port()}"),  # does not answer
    destination=ClusterSpec(name="kafka-b", kind="kafka", url="127.0.0.1:1"),
    links={},
    drain_timeout_s=1.0,
)


def record(seq: int, reports: list[tuple[str | None, bytes]]) -> Record:
    def report(err: KafkaError | None, msg: Any) -> None:
        reports.append((err.name() if err else None, msg.value()))

    return Record(topic="t", partition=0, key=None, value=f"v{seq}".encode(), headers=(), timestamp=1,
                   sequence=seq, on_delivery=report, size=2)  # fmt: skip


def switch(txns: Transactions, producer: FakeProducer, new: Raw) -> None:
    """The producer's move and resume, as ProducerSwitch runs them."""
    txns.connect(new)  # type: ignore[arg-type]
    txns.lock.acquire()
    with producer.state.lock:
        old, producer.state.inner = producer.state.inner, new  # type: ignore[assignment]
        txns.move(old, new, PLAN)  # type: ignore[arg-type]
        replay = producer.state.outbox.replay()
        txns.begin_replay(new, replay.records)  # type: ignore[arg-type]
        producer.replay(new, replay.records)
    txns.resume(old, PLAN)


@pytest.fixture
def setup() -> tuple[Transactions, FakeProducer, list[tuple[str | None, bytes]]]:
    producer = FakeProducer(Raw())
    txns = Transactions(producer.state, producer.replay, enabled=True)  # type: ignore[arg-type]
    txns.init_transactions(1)
    return txns, producer, []


def produce(txns: Transactions, producer: FakeProducer, r: Record, *, acked: bool) -> None:
    with producer.state.lock:
        txn = txns.for_record()
        assert txn is not None
        producer.state.outbox.add(r.slot, r)
        txn.records.append(r)
    if acked:
        producer.state.outbox.acknowledged(r.slot, r.size)
        r.reported = True


def test_a_replay_the_new_cluster_will_not_commit_goes_back_to_the_window(setup: Any) -> None:
    txns, producer, reports = setup
    txns.begin_transaction()
    for seq in range(3):
        produce(txns, producer, record(seq, reports), acked=True)
    txns.commit_transaction(1)
    new = Raw([ABORTABLE, ABORTABLE, ABORTABLE])
    with capture_logs() as logs:
        switch(txns, producer, new)
    assert new.calls == ["init", "begin", "commit", "abort", "begin", "commit", "abort", "begin", "commit"]
    assert [len(records) for _, records in producer.sent] == [3, 3, 3], "each attempt sends the replay again"
    assert (producer.state.outbox.pending, producer.state.outbox.in_window) == (0, 3), "kept for the next switch"
    assert [e["event"] for e in logs if e["event"].startswith("producer.replay")][-1] == "producer.replay_failed"
    assert txns.lock.acquire(blocking=False), "the application's transactional calls are not held up"
    txns.lock.release()


def test_a_retriable_replay_commit_is_committed_again_without_an_abort(setup: Any) -> None:
    txns, producer, reports = setup
    txns.begin_transaction()
    produce(txns, producer, record(0, reports), acked=True)
    txns.commit_transaction(1)
    new = Raw([RETRIABLE])
    switch(txns, producer, new)
    assert new.calls == ["init", "begin", "commit", "commit"]


def test_a_carried_transaction_the_new_cluster_will_not_commit_becomes_abortable(setup: Any) -> None:
    txns, producer, reports = setup
    txns.begin_transaction()
    produce(txns, producer, record(0, reports), acked=True)
    produce(txns, producer, record(1, reports), acked=False)
    producer.state.inner.commit_errors = [RETRIABLE]
    with pytest.raises(KafkaException):
        txns.commit_transaction(1)  # no answer: the outcome is unknown
    switch(txns, producer, Raw([ABORTABLE] * 3))
    assert [len(records) for _, records in producer.sent] == [2, 2, 2], "carried: sent with the replay"
    with pytest.raises(KafkaException) as info:
        txns.commit_transaction(1)
    assert info.value.args[0].txn_requires_abort()
    txns.abort_transaction(1)
    assert reports == [("_PURGE_QUEUE", b"v1")], "the record never acknowledged is reported purged, once"
    assert producer.state.outbox.pending == 0
    txns.begin_transaction()  # the next transaction runs
