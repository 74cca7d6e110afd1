"""The reference Kafka replicator against the real brokers: what MM2 would leave behind."""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.mm2.codec import Checkpoint, Heartbeat, OffsetSync
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_all, producer, read_all, read_partition, topics
from tests.support import wait_for

A_TO_B = "mirror-kafka-a-to-kafka-b"
B_TO_A = "mirror-kafka-b-to-kafka-a"


def flow(rc: RefCluster, name: str) -> dict:  # type: ignore[type-arg]
    return rc.replication()[name] or {}


def test_records_keep_partition_order_key_headers_and_timestamp(refcluster: RefCluster) -> None:
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"rep-{uuid.uuid4().hex[:8]}"
    create_topic(a, topic, 4)
    records = [
        {"topic": topic, "partition": i % 4, "key": f"k{i}".encode(), "value": f"v{i}".encode(),
         "headers": [("i", str(i).encode()), ("hs-id", uuid.uuid4().bytes)], "timestamp": 1_700_000_000_000 + i}
        for i in range(10_000)
    ]  # fmt: skip
    produce_all(producer(a), records)
    for p in range(4):
        sent = [r for r in records if r["partition"] == p]
        copied = read_partition(b, f"kafka-a.{topic}", p, until=len(sent), timeout=120)
        copied += read_all(b, f"kafka-a.{topic}", p)[len(copied) :]
        first_copy: dict[bytes | None, Message] = {}
        for m in copied:
            first_copy.setdefault(m.value(), m)  # dicts keep the order of first insertion
        firsts = list(first_copy.values())
        assert len(firsts) == len(sent), "a record is missing"
        if len(copied) > len(sent):  # at-least-once: a copy twice only after a reported failure
            assert flow(refcluster, A_TO_B)["errors"], "duplicates without a failure to explain them"
        for r, m in zip(sent, firsts, strict=True):
            assert (m.key(), m.value(), m.headers(), m.timestamp()[1]) == (
                r["key"], r["value"], r["headers"], r["timestamp"],
            )  # fmt: skip


def test_checkpoints_never_point_past_the_groups_position(refcluster: RefCluster) -> None:
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"cp-{uuid.uuid4().hex[:8]}"
    create_topic(a, topic, 3)
    produce_all(producer(a), [{"topic": topic, "partition": p, "value": b"x"} for p in range(3) for _ in range(700)])
    committed = {0: 0, 1: 350, 2: 700}  # nothing consumed, midway, everything consumed
    group = f"billing-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": a.url, "group.id": group, "enable.auto.commit": False})
    consumer.commit(
        offsets=[TopicPartition(topic, p, o, metadata=f"meta-{p}") for p, o in committed.items()], asynchronous=False
    )
    consumer.close()

    remote = f"kafka-a.{topic}"
    seen: dict[int, Checkpoint] = {}

    def checkpoints() -> bool:
        for m in read_all(b, "kafka-a.checkpoints.internal", 0):
            cp = Checkpoint.decode(m.key() or b"", m.value() or b"")
            if cp.group == group and cp.topic == remote:
                seen[cp.partition] = cp
        return len(seen) == 3 and all(seen[p].upstream_offset == o for p, o in committed.items())

    wait_for(checkpoints, 60, "a checkpoint for each partition at the committed offsets")
    admin = AdminClient({"bootstrap.servers": a.url})  # must outlive its futures
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    reported_metadata = {tp.partition: tp.metadata or "" for tp in listed.topic_partitions}
    for p, offset in committed.items():
        cp = seen[p]
        copies = read_partition(b, remote, p, until=700)
        # The target position of the first record the group has not consumed (or the end).
        real = copies[offset].offset() if offset < len(copies) else copies[-1].offset() + 1  # type: ignore[operator]
        assert 0 <= cp.downstream_offset <= real, (p, cp, real)
        # Tansu 0.6 keeps no commit metadata; the checkpoint carries what the source reports.
        assert cp.metadata == reported_metadata.get(p, "")
    # The status file is rewritten about once a second, so it may trail the topic a little.
    wait_for(lambda: flow(refcluster, A_TO_B)["checkpoints_emitted"] >= 3, 10, "the status to count the checkpoints")
    assert flow(refcluster, A_TO_B)["last_checkpoint"] is not None


def test_offset_syncs_and_heartbeats_are_written_in_mm2_format(refcluster: RefCluster) -> None:
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"sync-{uuid.uuid4().hex[:8]}"
    create_topic(a, topic, 1)
    produce_all(producer(a), [{"topic": topic, "partition": 0, "value": b"x"} for _ in range(250)])
    read_partition(b, f"kafka-a.{topic}", 0, until=250)

    def syncs() -> list[OffsetSync]:
        decoded = [
            OffsetSync.decode(m.key() or b"", m.value() or b"")
            for m in read_all(a, "mm2-offset-syncs.kafka-b.internal", 0)
        ]
        return [s for s in decoded if s.topic == topic]

    found = wait_for(
        lambda: (s := syncs()) and s[-1].upstream_offset == 249 and s, 30, "the periodic sync of offset 249"
    )
    pairs = [(s.upstream_offset, s.downstream_offset) for s in found]
    # First record at once, then every offset.lag.max (100) records, then the periodic one.
    assert pairs[:3] == [(0, 0), (101, 101), (202, 202)] and pairs[-1] == (249, 249)
    beat = read_partition(b, "heartbeats", 0, until=1)[0]
    hb = Heartbeat.decode(beat.key() or b"", beat.value() or b"")
    assert (hb.source_alias, hb.target_alias) == ("kafka-a", "kafka-b")


def test_active_active_does_not_loop(refcluster: RefCluster) -> None:
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"loop-{uuid.uuid4().hex[:8]}"
    for spec in (a, b):
        create_topic(spec, topic, 1)
        produce_all(producer(spec), [{"topic": topic, "partition": 0, "value": spec.name.encode()}])
    assert read_partition(b, f"kafka-a.{topic}", 0, until=1)[0].value() == b"kafka-a"
    assert read_partition(a, f"kafka-b.{topic}", 0, until=1)[0].value() == b"kafka-b"
    copies_seen = time.time()
    wait_for(
        lambda: all(flow(refcluster, f)["topics_refreshed_at"] > copies_seen + 1 for f in (A_TO_B, B_TO_A)),
        30,
        "both flows to refresh their topic lists after the copies appeared",
    )
    assert f"kafka-b.kafka-a.{topic}" not in topics(a)
    assert f"kafka-a.kafka-b.{topic}" not in topics(b)
    assert f"kafka-a.{topic}" not in flow(refcluster, B_TO_A)["topics"]


def test_replicator_killed_mid_stream_loses_nothing(refcluster: RefCluster) -> None:
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    create_topic(a, topic, 2)
    total = 10_000
    records = [{"topic": topic, "partition": i % 2, "value": str(i).encode()} for i in range(total)]
    writer = threading.Thread(target=produce_all, args=(producer(a), records))
    writer.start()
    wait_for(lambda: flow(refcluster, A_TO_B)["topics"].get(topic, {}).get("copied", 0) > 1500, 60, "copying to start")
    refcluster.kill(A_TO_B)  # SIGKILL mid-stream
    writer.join(60)
    refcluster.restart(A_TO_B)
    target = f"kafka-a.{topic}"

    def distinct_copies(p: int) -> int:
        return len({m.value() for m in read_all(b, target, p)})

    for p in range(2):
        sent = [r["value"] for r in records if r["partition"] == p]
        expected = len(sent)
        wait_for(lambda p=p, n=expected: distinct_copies(p) == n, 90, f"every record of partition {p} on the target")
        copied = [m.value() for m in read_all(b, target, p)]
        assert set(copied) == set(sent), "a record was lost"
        assert list(dict.fromkeys(copied)) == sent, "order of first copies differs from the source"


def test_identity_policy_keeps_names_and_marks_copies_so_they_do_not_loop(refcluster: RefCluster) -> None:
    """Two identity flows (run here, with separator '_' so their internal topics are their own)."""
    from hotstandby.refcluster.replicators.kafka.config import Endpoint, FlowConfig, Intervals
    from hotstandby.refcluster.replicators.kafka.flow import MARKER_HEADER, KafkaFlow

    prefix = f"idt{uuid.uuid4().hex[:6]}"
    topic = f"{prefix}-orders"
    specs = {n: refcluster.cluster_spec(n) for n in ("kafka-a", "kafka-b")}

    def endpoint(name: str) -> Endpoint:
        s = specs[name]
        return Endpoint(name, s.url, dict(s.client_config("producer")), dict(s.client_config("consumer")))

    intervals = Intervals(emit_checkpoints=1, offset_flush=1, refresh_topics=0.5, refresh_groups=1)
    flows = [
        KafkaFlow(
            FlowConfig(
                source=endpoint(src),
                target=endpoint(dst),
                policy="identity",
                separator="_",
                topics_include=f"{prefix}-.*",
                intervals=intervals,
            )
        )
        for src, dst in (("kafka-a", "kafka-b"), ("kafka-b", "kafka-a"))
    ]
    stop = threading.Event()
    threads = [threading.Thread(target=f.run, args=(stop,)) for f in flows]
    for spec in specs.values():
        create_topic(spec, topic, 1)
        produce_all(
            producer(spec), [{"topic": topic, "partition": 0, "value": f"{spec.name}-{i}".encode()} for i in range(5)]
        )
    for t in threads:
        t.start()
    try:
        # Each flow copies the 5 originals and skips the 5 copies the other flow wrote.
        wait_for(lambda: all(f.status.topics.get(topic, {}).get("copied", 0) >= 5 and f.status.records_skipped >= 5 for f in flows), 60,
                 "both flows to copy the originals and skip the copies")  # fmt: skip
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    for name, spec in specs.items():
        values = [m.value().decode() for m in read_all(spec, topic, 0)]
        assert sorted(values) == sorted(f"{c}-{i}" for c in specs for i in range(5)), name
        copies = [m for m in read_all(spec, topic, 0) if not m.value().decode().startswith(name)]
        other = "kafka-b" if name == "kafka-a" else "kafka-a"
        assert all(dict(m.headers() or [])[MARKER_HEADER] == other.encode() for m in copies)
    # Heartbeats are replicated too (MM2 copies them whatever the topic filter), hence per topic.
    assert [f.status.topics[topic]["copied"] for f in flows] == [5, 5]
    assert [f.status.records_skipped for f in flows] == [5, 5]


def test_a_topic_recreated_on_the_source_is_copied_from_its_new_beginning(refcluster: RefCluster) -> None:
    """The reference broker serves a fetch past the end by waiting, not with an out-of-range
    error: a replicator resuming at its old position would skip the new topic's first records."""
    a, b = refcluster.cluster_spec("kafka-a"), refcluster.cluster_spec("kafka-b")
    topic = f"again-{uuid.uuid4().hex[:8]}"
    create_topic(a, topic, 1)
    produce_all(producer(a), [{"topic": topic, "partition": 0, "value": f"old-{i}".encode()} for i in range(300)])
    read_partition(b, f"kafka-a.{topic}", 0, until=300, timeout=60)
    admin = AdminClient({"bootstrap.servers": a.url})
    admin.delete_topics([topic])[topic].result(15)
    wait_for(lambda: topic not in topics(a), 30, "the topic to be deleted")
    create_topic(a, topic, 1)
    new = {f"new-{i}".encode() for i in range(100)}
    produce_all(producer(a), [{"topic": topic, "partition": 0, "value": v} for v in sorted(new)])
    wait_for(lambda: new <= {m.value() for m in read_all(b, f"kafka-a.{topic}", 0)}, 60,
             "every record of the re-created topic on the target")  # fmt: skip
