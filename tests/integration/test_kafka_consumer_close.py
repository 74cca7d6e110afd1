"""Closing a Kafka consumer facade takes about as long as closing confluent-kafka's: the leave
in turn waits only for members leaving at the same moment, and a dead cluster is not waited for
— while the acknowledgements are stored and the group stays usable on the reference broker."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Message, TopicPartition

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config

# What closing may take on this shared machine, far below what the waits it replaces took
# (the leave timeout of 25 s; librdkafka's wait for its in-flight commit, session.timeout.ms).
CLOSE_BOUND_S = 5.0


def _poll_until(
    consumers: list[Consumer], done: Callable[[], bool], timeout: float, what: str, into: list[Message] | None = None
) -> None:
    """Poll every consumer in turn until ``done()``, adding the records they hand out to ``into``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        for consumer in consumers:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None and into is not None:
                into.append(msg)


def _timed_close(consumer: Consumer) -> float:
    started = time.monotonic()
    consumer.close()
    return time.monotonic() - started


def test_members_closed_one_after_the_other_close_within_seconds_and_leave_the_group_usable(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """An application closes its two consumers of a group one after the other: the first one's
    close does not wait for the second to rejoin (it does not poll), the second one's rejoins
    while it waits for its turn — and a consumer of the group afterwards still gets records
    (a member leaving mid-rebalance wedges the group on the reference broker)."""
    topic = f"cl-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(20)])
    config = route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"})
    first, second = Consumer(config), Consumer(config)
    try:
        first.subscribe([topic])
        second.subscribe([topic])
        _poll_until([first, second], lambda: bool(first.assignment()) and bool(second.assignment()), 60,
                    "a partition for each member")  # fmt: skip
        first_s = _timed_close(first)
        second_s = _timed_close(second)
    finally:
        first.close()
        second.close()
    assert first_s < CLOSE_BOUND_S, f"the first close took {first_s:.1f} s"
    assert second_s < 2 * CLOSE_BOUND_S, f"the second close took {second_s:.1f} s"
    later = Consumer(config)
    try:
        later.subscribe([topic])
        produce_values(refcluster, namespace, topic, [f"b{i}" for i in range(5)])
        got: list[Message] = []
        wanted = {f"b{i}" for i in range(5)}
        _poll_until([later], lambda: wanted <= {m.value().decode() for m in got}, 60, "the group's records", got)
    finally:
        later.close()


@pytest.fixture
def restart_kafka_a(refcluster: RefCluster) -> Iterator[None]:
    """kafka-a is started again (empty) after the test, for the tests after it."""
    yield
    if not refcluster.running()["kafka-a"]:
        refcluster.restart("kafka-a")


def test_close_against_a_killed_broker_returns_within_seconds_with_its_acknowledgements_stored(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, restart_kafka_a: None
) -> None:
    """The cluster in use is SIGKILLed: closing (auto commit) stores what was processed in the
    ledger and returns — librdkafka's close would wait for the commit it sends to the dead
    coordinator for session.timeout.ms (12 s here, 45 s by default)."""
    topic = f"ck-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(10)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    # The group join takes half the session timeout on the reference broker: 6 s.
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "session.timeout.ms": 12_000}))
    try:
        consumer.subscribe([topic])
        got: list[Message] = []
        _poll_until([consumer], lambda: len(got) >= 10, 60, "10 records", got)
        refcluster.kill("kafka-a", signal.SIGKILL)
        took = _timed_close(consumer)
    finally:
        consumer.close()
    assert took < CLOSE_BOUND_S, f"close took {took:.1f} s"
    stored = LedgerStore(center).load(group, topic, 0).ledger
    ids: list[RecordId] = [m.hs_id for m in got]  # type: ignore[attr-defined]  # the facade's messages carry it
    assert len(ids) == 10 and all(stored.has(r) for r in ids), "what was processed is acknowledged in the ledger"


def test_close_tells_on_revoke_which_may_commit_there_as_confluent_kafka(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"rv-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 2)
    produce_values(refcluster, namespace, topic, [f"v{i}" for i in range(10)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{
        "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"}))  # fmt: skip
    revoked: list[list[tuple[str, int]]] = []
    committed: list[int] = []

    def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
        revoked.append(sorted((tp.topic, tp.partition) for tp in partitions))
        committed.append(len(c.commit(asynchronous=False) or []))  # the consumer is still open here

    got: list[Message] = []
    consumer.subscribe([topic], on_revoke=on_revoke)
    _poll_until([consumer], lambda: len(got) >= 10, 60, "10 records", got)
    consumer.close()
    consumer.close()  # once only
    assert revoked == [[(topic, 0), (topic, 1)]], "close revokes the assignment, once"
    assert committed == [2], "both partitions' positions committed in on_revoke"
    again = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.offset.reset": "earliest"}))
    try:
        again.subscribe([topic])
        assert again.consume(10, 5) == [], "what was committed in on_revoke is not read again"
    finally:
        again.close()
