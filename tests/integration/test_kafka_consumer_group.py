"""The Kafka consumer's group across switches on the reference cluster: it joins the new
cluster's group once nobody is leaving it, a member joining during a switch, members left
behind removed."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka import Consumer
from hotstandby.adapters.kafka.consumer.group_leave import PendingLeaves
from hotstandby.adapters.kafka.consumer.stale_members import remove_members
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.switching import SwitchState
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config, wait_copied
from tests.integration.kafka_reading import consume, hold
from tests.support import capture_logs, wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


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


@pytest.mark.parametrize("flip", [True, False], ids=["after-a-switch", "after-a-rebalance"])
def test_a_commit_of_records_another_member_took_over_since_fails_as_kafkas_does(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, flip: bool
) -> None:
    """Member 1 holds records of kafka-a, uncommitted, and gives their partition up (across a
    flip, or only by leaving the subscription); member 2 takes it and hands them (or their
    copies on kafka-b) out again: redelivered, never committed. Member 1's commit of them now
    must fail, as Kafka refuses a commit from a member of an older generation, instead of
    reporting them acknowledged: that promises they are never handed out again, and member 2
    did (and, had it not fetched them yet, could still)."""
    if refcluster.brokers != "apache":
        # A leave the SDK does not order (its switches do: group_leave.py) racing a join.
        pytest.skip("the lite Kafka broker (Tansu) can lose a join racing a member's leave: no assignment")
    topic = f"t-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    values = [f"a{i}" for i in range(10)]
    produce_values(refcluster, namespace, topic, values)
    wait_copied(refcluster, topic, 1, len(values))
    config = route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                    "enable.auto.commit": False})  # fmt: skip
    first = Consumer(config)
    second: Consumer | None = None
    try:
        first.subscribe([topic])
        held = hold(first, len(values))
        if flip:
            center.switch("orders", "kafka-b", reason="test")
            wait_for(lambda: first.cluster == "kafka-b", 30, "member 1 to move (it read kafka-a to its end)")
        first.unsubscribe()  # the partition goes to member 2
        second = Consumer(config)
        second.subscribe([topic])
        got: list[str] = []
        deadline = time.monotonic() + 60
        while set(got) != set(values):  # member 1 polls too: the rebalance needs its revocation
            assert time.monotonic() < deadline, f"member 2 got {sorted(got)} within 60 s"
            assert first.poll(0.05) is None, "unsubscribed"
            msg = second.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
        assert sorted(got) == values
        with pytest.raises(KafkaException) as failed:
            first.commit(message=held[-1], asynchronous=False)
        assert failed.value.args[0].code() == KafkaError.ILLEGAL_GENERATION
    finally:
        closing = threading.Thread(target=first.close)  # together: see the test above
        closing.start()
        if second is not None:
            second.close()
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
