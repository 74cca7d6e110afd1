"""The reference Pulsar replicator against the real brokers: what geo-replication leaves behind."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pulsar
import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.replicators.pulsar.flow import BATCH_INDEX, MARKER, REPL_SOURCE_POSITION
from tests.support import wait_for

A_TO_B, B_TO_A = "mirror-pulsar-a-to-pulsar-b", "mirror-pulsar-b-to-pulsar-a"


@pytest.fixture
def clients(refcluster: RefCluster) -> Iterator[dict[str, pulsar.Client]]:
    quiet = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    made = {
        n: pulsar.Client(refcluster.cluster_spec(n).url, operation_timeout_seconds=10, logger=quiet)
        for n in ("pulsar-a", "pulsar-b")
    }
    yield made
    for c in made.values():
        c.close()


def register(rc: RefCluster, topic: str, *clusters: str) -> None:
    with ConfigCenter.open(replace(rc.settings())) as center:
        for cluster in clusters:
            center.register_topic(cluster, topic)


def _position(msg: pulsar.Message) -> tuple[int, int, int, int]:
    mid = msg.message_id()
    return mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()


def drain(
    client: pulsar.Client, topic: str, count: int, timeout_s: float = 60, *, distinct: bool = False
) -> list[pulsar.Message]:
    """Read from the beginning until ``count`` messages (or distinct payloads) were seen.

    A message is one stored message: pulsar-lite may dispatch an entry twice in a row to a
    consumer that subscribed before the topic's first entries arrived (see docs/refcluster.md),
    so what the consumer receives again under the same message id is counted once.
    """
    consumer = client.subscribe(
        topic,
        f"check-{uuid.uuid4().hex[:6]}",
        initial_position=pulsar.InitialPosition.Earliest,
        batch_receive_policy=pulsar.ConsumerBatchReceivePolicy(1000, -1, 100),
    )
    stored: dict[tuple[int, int, int, int], pulsar.Message] = {}  # keeps the order of first receipt
    payloads: set[bytes] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while (len(payloads) if distinct else len(stored)) < count:
            assert time.monotonic() < deadline, (
                f"{len(stored)} messages ({len(payloads)} distinct) of {count} on {topic}"
            )
            for msg in consumer.batch_receive():
                stored.setdefault(_position(msg), msg)
                payloads.add(msg.data())
                consumer.acknowledge(msg)
        return list(stored.values())
    finally:
        consumer.close()


def flow(rc: RefCluster, name: str) -> dict:  # type: ignore[type-arg]
    return rc.replication()[name] or {}


def test_copies_keep_payload_key_properties_event_time_and_source_position(
    refcluster: RefCluster, clients: dict[str, pulsar.Client]
) -> None:
    topic = f"persistent://public/default/rep-{uuid.uuid4().hex[:8]}"
    register(refcluster, topic, "pulsar-a")
    producer = clients["pulsar-a"].create_producer(
        topic, batching_enabled=True, batching_max_publish_delay_ms=20, block_if_queue_full=True
    )
    results: list[pulsar.Result] = []
    for i in range(300):
        producer.send_async(
            f"m{i}".encode(), lambda res, _mid: results.append(res), properties={"i": str(i)},
            partition_key=f"k{i % 7}", event_timestamp=1_700_000_000_000 + i,
        )  # fmt: skip
    producer.flush()
    assert results == [pulsar.Result.Ok] * 300
    source = drain(clients["pulsar-a"], topic, 300)
    copies = drain(clients["pulsar-b"], topic, 300, distinct=True)
    first_copy: dict[bytes, pulsar.Message] = {}
    for m in copies:
        first_copy.setdefault(m.data(), m)  # dicts keep the order of first insertion
    first_copies = list(first_copy.values())
    assert [m.data() for m in first_copies] == [m.data() for m in source]
    if len(copies) > len(source):  # at-least-once: a copy twice only after a reported failure
        assert flow(refcluster, A_TO_B)["errors"], "duplicates without a failure to explain them"
    by_data = {m.data(): m for m in source}
    batched = 0
    for copy in copies:
        src = by_data[copy.data()]
        mid = src.message_id()
        expected = {**src.properties(), REPL_SOURCE_POSITION: f"{mid.ledger_id()}:{mid.entry_id()}", MARKER: "pulsar-a"}
        if mid.batch_index() >= 0:
            expected[BATCH_INDEX] = str(mid.batch_index())
            batched += 1
        assert copy.properties() == expected
        assert (copy.partition_key(), copy.event_timestamp()) == (src.partition_key(), src.event_timestamp())
    assert batched > 0, "the test should cover batched source messages"


def test_active_active_does_not_loop(refcluster: RefCluster, clients: dict[str, pulsar.Client]) -> None:
    topic = f"persistent://public/default/loop-{uuid.uuid4().hex[:8]}"
    before = {f: flow(refcluster, f).get("records_skipped", 0) for f in (A_TO_B, B_TO_A)}
    register(refcluster, topic, "pulsar-a", "pulsar-b")
    for name in ("pulsar-a", "pulsar-b"):
        p = clients[name].create_producer(topic)
        for i in range(10):
            p.send(f"{name}-{i}".encode())
        p.close()
    # Each flow copies the 10 originals and skips the 10 copies the other flow wrote.
    wait_for(
        lambda: all(flow(refcluster, f).get("records_skipped", 0) - before[f] >= 10 for f in (A_TO_B, B_TO_A)),
        60,
        "both flows to see (and skip) the other's copies",
    )
    for name in ("pulsar-a", "pulsar-b"):
        values = sorted(m.data().decode() for m in drain(clients[name], topic, 20))
        assert values == sorted(f"{c}-{i}" for c in ("pulsar-a", "pulsar-b") for i in range(10)), name
        extra = clients[name].subscribe(
            topic, f"x-{uuid.uuid4().hex[:6]}", initial_position=pulsar.InitialPosition.Earliest
        )
        held: set[tuple[int, int, int, int]] = set()
        while True:
            try:
                held.add(_position(extra.receive(timeout_millis=500)))
            except pulsar.Timeout:
                break
        extra.close()
        assert len(held) == 20, f"{name} holds {len(held)} messages: a copy was copied again"


def test_replicator_killed_mid_stream_loses_nothing(refcluster: RefCluster, clients: dict[str, pulsar.Client]) -> None:
    topic = f"persistent://public/default/crash-{uuid.uuid4().hex[:8]}"
    register(refcluster, topic, "pulsar-a")
    total = 5000
    producer = clients["pulsar-a"].create_producer(
        topic, batching_enabled=True, batching_max_publish_delay_ms=5, block_if_queue_full=True
    )
    results: list[pulsar.Result] = []

    def write() -> None:
        for i in range(total):
            producer.send_async(str(i).encode(), lambda res, _mid: results.append(res))
        producer.flush()

    writer = threading.Thread(target=write)
    writer.start()
    wait_for(lambda: flow(refcluster, A_TO_B)["topics"].get(topic, {}).get("copied", 0) > 500, 60, "copying to start")
    refcluster.kill(A_TO_B)
    writer.join(60)
    assert results == [pulsar.Result.Ok] * total, "the source did not store every message"
    refcluster.restart(A_TO_B)
    copies = [m.data() for m in drain(clients["pulsar-b"], topic, total, timeout_s=120, distinct=True)]
    sent = [str(i).encode() for i in range(total)]
    assert set(copies) >= set(sent), "a message was lost"
    assert list(dict.fromkeys(copies)) == sent, "order of first copies differs from the source"
