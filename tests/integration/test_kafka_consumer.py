"""The Kafka consumer facade: exact filtering by the ack ledger, across a restart and a switch."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import ConsumerGroupTopicPartitions, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka import Consumer
from hotstandby.adapters.kafka.consumer.group_leave import PendingLeaves
from hotstandby.adapters.kafka.consumer.stale_members import remove_members
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switching import SwitchState
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config, wait_copied
from tests.integration.kafka_helpers import producer as raw_producer
from tests.support import capture_logs, wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


def hold(consumer: Consumer, count: int, timeout: float = 60.0) -> list[Message]:
    """The next ``count`` records, kept (not committed)."""
    held: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(held) < count:
        assert time.monotonic() < deadline, f"{len(held)} of {count} records"
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            held.append(msg)
    return held


def consume(consumer: Consumer, count: int, timeout: float = 60.0) -> list[str]:
    """Values of the next ``count`` records (fails after ``timeout``)."""
    return [m.value().decode() for m in hold(consumer, count, timeout)]


def consume_until(
    consumer: Consumer, done: Callable[[], bool], timeout: float = 60.0, what: Callable[[], str] = str
) -> list[str]:
    """Keep polling (and collecting) until ``done()``; fails after ``timeout``."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s {what()}"
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
    return got


def consume_all(consumer: Consumer, wanted: set[str], timeout: float = 60.0) -> list[str]:
    """Values polled until every one of ``wanted`` arrived (fails after ``timeout``)."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not wanted <= set(got):
        assert time.monotonic() < deadline, f"not delivered within {timeout} s: {sorted(wanted - set(got))}"
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
    return got


def no_more(consumer: Consumer, within: float = 3.0) -> list[str]:
    """Records that still arrive within ``within`` s (a bounded wait for an absence)."""
    extra, deadline = [], time.monotonic() + within
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            extra.append(msg.value().decode())
    return extra


def test_restart_without_a_switch_filters_what_was_committed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"c-{uuid.uuid4().hex[:8]}"
    a = refcluster.cluster_spec("kafka-a")
    create_topic(a, topic, 2)
    values = [f"r{i}" for i in range(200)]
    produce_values(refcluster, namespace, topic, values)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = Consumer(route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False}))
    try:
        first.subscribe([topic])
        seen = consume(first, 120)
        first.commit(asynchronous=False)
    finally:
        first.close()
    # Lose the broker's committed offsets (as after an offsets-topic loss or a reset by mistake):
    # the ledger alone must keep acknowledged records from being delivered again.
    admin = AdminClient({"bootstrap.servers": a.url})
    reset = [TopicPartition(topic, p, 0) for p in range(2)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, reset)])[group].result(10)
    second = Consumer(route_config(refcluster, namespace, **{"group.id": group}))
    try:
        second.subscribe([topic])
        rest = consume(second, 80)
        assert no_more(second) == []
        assert second.filtered >= 120
    finally:
        second.close()
    assert sorted(seen + rest) == sorted(values), "lost or duplicated"
    assert not set(seen) & set(rest)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_switch_mid_stream_loses_nothing_and_delivers_nothing_twice(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, protocol: str
) -> None:
    """With either group protocol: the classic one, or KIP-848's (``group.protocol=consumer``,
    where the broker assigns the partitions incrementally)."""
    if protocol == "consumer" and refcluster.brokers != "apache":
        pytest.skip("the lite Kafka broker (Tansu) has no KIP-848 groups")
    topic = f"s-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    before = [f"a{i}" for i in range(300)]
    produce_values(refcluster, namespace, topic, before)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200,
                                                               "group.protocol": protocol}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 150)
        consumer.commit(asynchronous=False)
        wait_copied(refcluster, topic, 2, len(before))  # MM2 syncs what it copied
        center.switch("orders", "kafka-b", reason="test")
        after = [f"b{i}" for i in range(100)]
        produce_values(refcluster, namespace, topic, after)  # the producer follows the route: on kafka-b
        got += consume(consumer, 250, timeout=120)
        got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        # Started on kafka-b at translated positions (MM2 checkpoints for the copies, reverse
        # offset syncs for kafka-b's own records read on kafka-a): whatever is read again is
        # filtered, nothing is delivered twice.
        got += consume_until(consumer, lambda: len(consumer.assignment()) > 0)
        assert no_more(consumer) == []
        assert consumer.filtered < 300, "translated start positions, not the beginning"
    finally:
        consumer.close()
    assert sorted(got) == sorted(before + after), "lost or duplicated"
    assert len(got) == len(set(got))


def test_planned_switch_drains_the_old_cluster_first(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """With replication stopped, records only on kafka-a are still consumed, before the move."""
    topic = f"d-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    replicator = "mirror-kafka-a-to-kafka-b"
    values = [f"r{i}" for i in range(200)]
    group = f"g-{uuid.uuid4().hex[:6]}"
    refcluster.kill(replicator, signal.SIGTERM)
    try:
        produce_values(refcluster, namespace, topic, values)
        consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200}))
        try:
            consumer.subscribe([topic])
            got = consume(consumer, 50)
            center.switch("orders", "kafka-b", reason="test")
            # The application is busy: without a drain the consumer would move on without it.
            wait_for(lambda: consumer.switch_state is not SwitchState.ACTIVE or consumer.cluster == "kafka-b",
                     10, "the switch to start")  # fmt: skip
            got += consume_until(consumer, lambda: consumer.cluster == "kafka-b")
            assert sorted(got) == sorted(values), "the drain must consume what only kafka-a holds"
        finally:
            consumer.close()
    finally:
        refcluster.restart(replicator)


def test_a_copy_arriving_before_the_original_is_acknowledged_is_not_handed_out_again(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A re-sent record and its replicated copy can both reach a member before the ledger holds
    either (auto commit stores it up to an interval later): the second is the same record."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    a = refcluster.cluster_spec("kafka-a")
    for name in (topic, f"kafka-b.{topic}"):
        create_topic(a, name, 1)
    raw = raw_producer(a)
    ids = [RecordId(b"\x07" * 16, 0, seq).encode() for seq in range(20)]
    for name in (topic, f"kafka-b.{topic}"):  # the same 20 records in both physical topics
        for seq, rid in enumerate(ids):
            raw.produce(name, value=f"r{seq}".encode(), partition=0, headers=[(HEADER, rid)])
    assert raw.flush(30) == 0
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                               "auto.commit.interval.ms": 60_000}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 20)
        got += consume_until(consumer, lambda: consumer.filtered >= 20, what=lambda: f"filtered {consumer.filtered}")
        assert no_more(consumer, within=1.0) == []
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"r{i}" for i in range(20))


def test_a_switch_joins_the_new_clusters_group_only_once_nobody_is_leaving_it(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A member of the group is still leaving it on kafka-b (as after a flip away from kafka-b
    a moment ago): the switch to kafka-b waits for that leave before joining there — a join
    racing a leave can leave the reference broker's group without an assignment for good."""
    topic = f"l-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(20)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "auto.commit.interval.ms": 200}))
    leaving = PendingLeaves(center, "kafka-b", group)
    lease = leaving.mark("a member still leaving")
    try:
        consumer.subscribe([topic])
        got = consume(consumer, 20)
        center.switch("orders", "kafka-b", reason="test")
        wait_for(lambda: consumer.switch_state is SwitchState.SWITCHING or consumer.cluster == "kafka-b", 30,
                 "the consumer to reach the join")  # fmt: skip
        held_until = time.monotonic() + 2.0
        while time.monotonic() < held_until:  # a bounded look for something that must not happen
            assert consumer.poll(0.1) is None
            assert consumer.cluster == "kafka-a", "joined kafka-b's group while a member was leaving it"
        leaving.unmark(lease)
        produce_values(refcluster, namespace, topic, [f"b{i}" for i in range(10)])
        got += consume(consumer, 10, timeout=60)
        assert consumer.cluster == "kafka-b"
    finally:
        leaving.unmark(lease)
        consumer.close()
    assert sorted(got) == sorted([f"a{i}" for i in range(20)] + [f"b{i}" for i in range(10)])


def test_a_member_joining_during_a_switch_rebalances_without_duplicates(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """The flip moves member 1 while member 2 starts on the new cluster: the group rebalances
    there while member 1 is still switching. Together they get every record exactly once."""
    topic = f"r-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    before = [f"a{i}" for i in range(200)]
    produce_values(refcluster, namespace, topic, before)
    config = route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                    "auto.commit.interval.ms": 200})  # fmt: skip
    first = Consumer(config)
    second: Consumer | None = None
    got: list[str] = []
    logs = capture_logs()
    events = logs.__enter__()
    try:
        assigned: list[tuple[str, str]] = []
        first.subscribe([topic], on_assign=lambda c, parts: assigned.append(("first", c.cluster)))
        got += consume(first, 100)
        center.switch("orders", "kafka-b", reason="test")
        second = Consumer(config)  # starts on kafka-b, while the first one is moving there
        second.subscribe([topic], on_assign=lambda c, parts: assigned.append(("second", c.cluster)))
        after = [f"b{i}" for i in range(100)]
        produce_values(refcluster, namespace, topic, after)
        both = {("first", "kafka-b"), ("second", "kafka-b")}
        deadline = time.monotonic() + 120
        quiet_until = None
        # Poll both (a rebalance needs every member to poll) until all arrived, both had
        # partitions on kafka-b, and 2 s passed without anything new.
        while time.monotonic() < deadline:
            for member in (first, second):
                # What a member has fetched, at once (the first one drains kafka-a meanwhile),
                # then a short wait: both keep polling, as a rebalance needs.
                while (msg := member.poll(0.05)) is not None:
                    if msg.error() is None:
                        got.append(msg.value().decode())
                        quiet_until = None
            if len(got) >= 300 and both <= set(assigned):
                quiet_until = quiet_until or time.monotonic() + 2.0
                if time.monotonic() >= quiet_until:
                    break
        assert both <= set(assigned), f"both must be members on kafka-b: {assigned}"
    finally:
        # Together, as members of separate processes close: a member leaving waits for the
        # group to settle, which needs the others to keep polling (adapters/kafka/consumer/group_leave.py).
        closing = threading.Thread(target=first.close)
        closing.start()
        if second is not None:
            second.close()
        closing.join(60)
        logs.__exit__(None, None, None)
    twice = sorted({v for v in got if got.count(v) > 1})
    assert not twice, f"handed out twice: {twice}"
    assert sorted(got) == sorted(before + after)
    # The application kept reading: the first member read kafka-a to its end before it moved.
    assert [e for e in events if e["event"] == "consumer.drain_incomplete"] == []


def test_a_commit_after_the_switch_of_a_record_from_the_old_cluster_moves_no_offset_there(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """An application still holding records of kafka-a commits them once the consumer is on
    kafka-b. The offset names another record there: committing it would skip kafka-b's own
    records. The commit acknowledges the records by identity instead."""
    topic = f"l-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    produce_values(refcluster, namespace, topic, [f"a{i}" for i in range(30)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.subscribe([topic])
        held = hold(consumer, 30)
        consumer.commit(message=held[19], asynchronous=False)
        center.switch("orders", "kafka-b", reason="test")
        early = consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        committed = consumer.commit(message=held[29], asynchronous=False)  # a0..a29: all processed now
        assert (topic, 0, 30) not in {(tp.topic, tp.partition, tp.offset) for tp in committed or []}
        stored = LedgerStore(center).load(group, topic, 0).ledger
        ids = [m.hs_id for m in held]  # type: ignore[attr-defined]  # the facade's messages carry it
        assert all(stored.has(r) for r in ids), "the late commit is stored by identity"
        produce_values(refcluster, namespace, topic, [f"b{i}" for i in range(5)])  # on kafka-b, offsets 0..4
        got = consume_all(consumer, {f"b{i}" for i in range(5)}, timeout=90)  # fails if they were skipped
        got += no_more(consumer)
    finally:
        consumer.close()
    assert set(early) <= {f"a{i}" for i in range(20, 30)}, "only uncommitted records come again"
    assert sorted(got) == [f"b{i}" for i in range(5)], "acknowledged records are filtered after the late commit"


def test_without_auto_commit_only_what_the_application_commits_is_acknowledged(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """As with confluent_kafka: commit(message) covers that message's partition only, and
    neither a switch nor closing commits anything. The uncommitted records come again."""
    topic = f"m-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    values = [f"a{i}" for i in range(40)]
    produce_values(refcluster, namespace, topic, values)
    config = route_config(
        refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    )
    consumer = Consumer(config)
    try:
        consumer.subscribe([topic])
        held = hold(consumer, 40)
        last_of_0 = [m for m in held if m.partition() == 0][-1]
        consumer.commit(message=last_of_0, asynchronous=False)
        committed = {m.value().decode() for m in held if m.partition() == 0}
        center.switch("orders", "kafka-b", reason="test")
        again = consume_until(consumer, lambda: consumer.cluster == "kafka-b")
        again += consume_all(consumer, set(values) - committed - set(again), timeout=90)
        again += no_more(consumer)
    finally:
        consumer.close()
    assert sorted(again) == sorted(set(values) - committed), "exactly the uncommitted records, once"


def test_a_copy_that_appears_later_is_assigned_with_its_topic_partition_by_partition(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """A remote copy created once the members are in the group (as the replicator does for a
    new topic) joins their subscription at their next metadata refresh, and each member then
    holds the same partitions of the topic and of the copy: a record there twice (a producer's
    re-sent twin and its copy) reaches one member, whose ledger filters it."""
    if refcluster.brokers != "apache":
        pytest.skip("the lite Kafka broker (Tansu) describes a group without its members' assignments")
    topic = f"cp-{uuid.uuid4().hex[:8]}"
    copy = f"kafka-b.{topic}"
    spec = refcluster.cluster_spec("kafka-a")
    create_topic(spec, topic, 4)
    group = f"g-{uuid.uuid4().hex[:6]}"
    # How often a member looks for topics it subscribed to that were not there: librdkafka's
    # default is 5 minutes, until when the members disagree on what they subscribe to.
    config = {"group.id": group, "topic.metadata.refresh.interval.ms": 5000}
    members = [Consumer(route_config(refcluster, namespace, **config)) for _ in range(2)]
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})

    def assignments() -> list[dict[str, set[int]]]:
        found = admin.describe_consumer_groups([group], request_timeout=5)[group].result(10)
        out = []
        for member in found.members:
            parts: dict[str, set[int]] = {}
            for tp in member.assignment.topic_partitions:
                parts.setdefault(tp.topic, set()).add(tp.partition)
            out.append(parts)
        return out

    def polling_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what} within {timeout} s: {assignments()}"
            for member in members:  # a rebalance needs every member to poll
                member.poll(0.1)

    try:
        for member in members:
            member.subscribe([topic])
        polling_until(lambda: sum(len(a.get(topic, ())) for a in assignments()) == 4 and len(assignments()) == 2,
                      60, "both members share the topic")  # fmt: skip
        create_topic(spec, copy, 4)

        def together() -> bool:
            found = assignments()
            return len(found) == 2 and all(a.get(topic) and a.get(topic) == a.get(copy) for a in found)

        # The member that sees the copy first may get all of it; the other one rejoins once
        # it sees the copy too.
        polling_until(together, 30, "each member holding the same partitions of the topic and the copy")
    finally:
        closing = threading.Thread(target=members[0].close)
        closing.start()
        members[1].close()
        closing.join(60)


def test_members_left_behind_are_removed_from_the_group(refcluster: RefCluster, namespace: str) -> None:
    """The leave the SDK sends for members it left on a cluster that died: the broker drops
    them from the group; a member it no longer knows counts as gone too."""
    if refcluster.brokers != "apache":
        pytest.skip("the lite Kafka broker (Tansu) describes a group without its members")
    spec = refcluster.cluster_spec("kafka-a")
    topic = f"sm-{uuid.uuid4().hex[:8]}"
    create_topic(spec, topic, 2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    raw = RawConsumer({"bootstrap.servers": spec.url, "group.id": group, **spec.client_config("consumer")})
    admin = AdminClient({**spec.client_config("admin"), "bootstrap.servers": spec.url})

    def members() -> list[str]:
        found = admin.describe_consumer_groups([group], request_timeout=5)[group].result(10)
        return [m.member_id for m in found.members]

    try:
        raw.subscribe([topic])
        deadline = time.monotonic() + 60
        while not raw.assignment():
            assert time.monotonic() < deadline, "never assigned"
            raw.poll(0.2)
        member = raw.memberid()
        assert members() == [member]
        gone = remove_members(spec, group, [member, "rdkafka-never-was-a-member"])
        assert gone == {member, "rdkafka-never-was-a-member"}
        assert member not in members()
    finally:
        raw.close()
