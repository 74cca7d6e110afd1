"""A Pulsar producer's switch re-sends only what geo-replication has not provably copied (on
Apache Pulsar; pulsar-lite does not serve the read that proves it, so there the whole window is
re-sent)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import quiet, replicated
from tests.support import wait_for

pytestmark = pytest.mark.apache

ROUTE = "payments"
SKEW_MS = 200


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    name = f"persistent://public/default/trim-{uuid.uuid4().hex[:8]}"
    replicated(refcluster, name)
    return name


@pytest.fixture
def client(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[Client]:
    made = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace, logger=quiet(),
                  options={"hotstandby.timestamp.skew.ms": SKEW_MS})  # fmt: skip
    yield made
    made.close()


def _values_on(refcluster: RefCluster, cluster: str, topic: str) -> list[bytes]:
    """Every message's value on ``cluster``'s ``topic``, copies and re-sent twins included."""
    raw = pulsar.Client(refcluster.cluster_spec(cluster).url, logger=quiet())
    try:
        reader = raw.create_reader(topic, pulsar.MessageId.earliest)
        values = []
        while True:  # to the end: a second without a message (pulsar-lite has no last message id of an empty topic)
            try:
                values.append(reader.read_next(1_000).data())
            except pulsar.Timeout:
                return values
    finally:
        raw.close()


def _send(producer: object, values: list[bytes]) -> None:
    done = threading.Semaphore(0)
    failed: list[object] = []

    def report(result: pulsar.Result, _mid: object) -> None:
        if result != pulsar.Result.Ok:
            failed.append(result)
        done.release()

    for value in values:
        producer.send_async(value, report)  # type: ignore[attr-defined]
    for _ in values:
        assert done.acquire(timeout=30), "a send was not acknowledged within 30 s"
    assert failed == []


@pytest.mark.apache_only  # pulsar-lite serves no reader from the latest message, inclusive
@pytest.mark.parametrize("batching", [False, True], ids=["unbatched", "batched"])
def test_a_planned_switch_leaves_out_what_geo_replication_copied(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str, batching: bool
) -> None:
    """Unbatched copies show their source position; batched ones do not, and the producer
    knows them by their identity instead."""
    producer = client.create_producer(topic, batching_enabled=batching)
    first = [f"m{i}".encode() for i in range(300)]
    _send(producer, first)
    # Later messages, copied after the first ones were acknowledged by more than the skew
    # margin: the newest copy on pulsar-b is then the proof for the first 300.
    later: list[bytes] = []

    def first_proven_copied() -> bool:
        later.append(f"later{len(later)}".encode())
        _send(producer, [later[-1]])
        on_b = set(_values_on(refcluster, "pulsar-b", topic))
        return set(first) <= on_b and len(later) > 1 and later[-2] in on_b

    wait_for(first_proven_copied, 60, "copies of the first 300 and a later message on pulsar-b")
    center.switch(ROUTE, "pulsar-b", reason="planned")
    wait_for(lambda: client.spec.name == "pulsar-b", 30, "the client to move to pulsar-b")
    after = [f"after{i}".encode() for i in range(50)]
    _send(producer, after)
    trimmed, resent = producer.trimmed, producer.resent
    producer.close()
    assert trimmed >= len(first), f"only {trimmed} of the {len(first)} copied messages left out of the re-send"
    assert resent <= len(later), f"{resent} re-sent: more than the {len(later)} messages sent after the first 300"
    on_b = _values_on(refcluster, "pulsar-b", topic)
    assert set(first + later + after) <= set(on_b), "a message is missing on pulsar-b"


def test_a_planned_switch_right_after_a_send_waits_for_the_copies_instead_of_sending_twins(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """A switch right after a send, before geo-replication copied the newest messages: the
    producer waits (within the drain timeout) until the copies prove them copied and re-sends
    nothing, so pulsar-b holds each message once. pulsar-lite proves nothing: the whole
    window is re-sent there, and pulsar-b ends up with all. Replication of the topic runs
    already (one message copied first): a target that holds nothing of a topic yet proves
    nothing, and the whole window is re-sent to it."""
    warm = pulsar.Client(refcluster.cluster_spec("pulsar-a").url, logger=quiet())
    try:
        warm.create_producer(topic).send(b"warm-up")
    finally:
        warm.close()
    wait_for(lambda: b"warm-up" in _values_on(refcluster, "pulsar-b", topic), 60, "replication of the topic to run")
    producer = client.create_producer(topic)
    values = [f"m{i}".encode() for i in range(200)]
    _send(producer, values)
    center.switch(ROUTE, "pulsar-b", reason="planned")
    wait_for(lambda: client.spec.name == "pulsar-b", 30, "the client to move to pulsar-b")
    producer.flush()
    resent = producer.resent
    producer.close()
    wait_for(lambda: set(values) <= set(_values_on(refcluster, "pulsar-b", topic)), 60, "every message on pulsar-b")
    if refcluster.brokers == "apache":
        assert resent == 0
        on_b = _values_on(refcluster, "pulsar-b", topic)
        assert sorted(on_b) == sorted([b"warm-up", *values]), "a message on pulsar-b twice (re-sent beside its copy)"
    else:
        assert resent == len(values)


@pytest.mark.apache_only  # pulsar-lite serves no reader from the latest message, inclusive
def test_a_producer_sending_through_a_planned_switch_sends_no_twins(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """The application sends all along, more than its queue holds (``block_if_queue_full``).
    Its messages wait while the switch prepares (the old cluster acknowledges what it has,
    replication copies it), then go to pulsar-b: each message is on pulsar-b once, and the
    switch takes far less than the drain timeout (a send waiting for room must not hold up
    the switch, which makes that room)."""
    producer = client.create_producer(topic, max_pending_messages=5, block_if_queue_full=True)
    sent: list[bytes] = []
    results: list[pulsar.Result] = []
    stop = threading.Event()

    def send_all_along() -> None:
        while not stop.is_set() or len(sent) < 50:
            sent.append(f"m{len(sent)}".encode())
            producer.send_async(sent[-1], lambda result, _mid: results.append(result))

    sender = threading.Thread(target=send_all_along)
    sender.start()
    try:
        wait_for(lambda: len(results) >= 300, 60, "300 messages acknowledged")
        center.switch(ROUTE, "pulsar-b", reason="planned")
        wait_for(lambda: client.spec.name == "pulsar-b", 30, "the client to move to pulsar-b")
        moved_at = len(sent)
        wait_for(lambda: len(sent) >= moved_at + 100, 60, "100 more messages sent on pulsar-b")
    finally:
        stop.set()
        sender.join(60)
    producer.flush()
    resent, duration = producer.resent, client.follower.switcher.history[-1].duration_s
    producer.close()
    assert len(results) == len(sent) and set(results) == {pulsar.Result.Ok}, "every send acknowledged"
    wait_for(lambda: set(sent) <= set(_values_on(refcluster, "pulsar-b", topic)), 60, "every message on pulsar-b")
    on_b = _values_on(refcluster, "pulsar-b", topic)
    assert len(on_b) == len(set(on_b)), f"{len(on_b) - len(set(on_b))} messages on pulsar-b twice; {resent} re-sent"
    assert duration < 5.0, f"the switch took {duration:.1f} s (drain timeout 10 s)"
