"""A switch inside a micro-batch: an executor's task whose planned cluster is SIGKILLed reads
its partitions on the cluster the route moved to, and a replay of the task reads the same."""

from __future__ import annotations

import uuid

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM, identity_in
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.versioned import read_versioned
from hotstandby.failover.ledger.staged import CopyMark, StagedAcks, StagedPart, read_on
from hotstandby.refcluster import RefCluster
from hotstandby.spark_integration.kafka.read import ReadTask
from hotstandby.spark_integration.pulsar.cluster import PulsarCluster, id_text
from hotstandby.spark_integration.pulsar.read import PulsarReadTask
from hotstandby.spark_integration.source.cluster_plan import ReadsPartition
from hotstandby.spark_integration.source.options import parse_options
from hotstandby.spark_integration.source.planning import Range, Task
from hotstandby.spark_integration.source.replan import Replans
from tests.integration.kafka_helpers import create_topic, produce_values
from tests.integration.test_spark_pulsar import send
from tests.integration.test_spark_source import replicated
from tests.support import wait_for

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = [pytest.mark.integration, pytest.mark.apache]


def values_of(task: ReadsPartition) -> tuple[list[str], set[str]]:
    rows = [batch.to_pydict() for batch in task.read()]
    return [v.decode() for r in rows for v in r["value"]], {c for r in rows for c in r["cluster"]}


def values_on(url: str, topic: str) -> set[str]:
    """The distinct values a reader from the earliest finds on ``topic`` now (a replicator that
    retried a round copies some messages twice: a count says nothing)."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        found = set()
        while reader.has_message_available():
            found.add(reader.read_next(timeout_millis=5000).data().decode())
        return found
    except pulsar.UnknownError:  # pulsar-lite, for a topic nothing was written to yet
        return set()
    finally:
        client.close()


def registered_topic(rc: RefCluster, center: ConfigCenter, prefix: str) -> str:
    """A new Pulsar topic, registered on both clusters in the test's namespace and in the
    default one, which the replicators read."""
    topic = f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"
    with ConfigCenter.open(rc.settings()) as shared:
        for c in (center, shared):
            for cluster in ("pulsar-a", "pulsar-b"):
                c.register_topic(cluster, topic)
    return topic


def test_a_task_whose_cluster_died_reads_on_the_new_cluster_and_its_replay_reads_the_same(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"sr-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 1)
    values = [f"v{i}" for i in range(120)]
    produce_values(refcluster, namespace, topic, values)
    replicated(refcluster, topic, len(values))
    group = f"q-{topic}"
    options = parse_options({"hotstandby.route": "orders", "hotstandby.etcd": f"127.0.0.1:{refcluster.ports.etcd}",
                             "hotstandby.namespace": namespace, "hotstandby.group": group, "subscribe": topic,
                             "kafkaConsumer.pollTimeoutMs": "20000"},
                            streaming=True)  # fmt: skip
    route = center.route("orders")
    planned = ReadTask(center.cluster("kafka-a"), options, route.epoch, Task(topic, 0, (Range(topic, 0, 0, 120),)),
                       batch="b-1", part=0)  # fmt: skip
    refcluster.kill("kafka-a")
    try:
        center.switch("orders", "kafka-b", reason="test: kafka-a died under a batch")
        got, clusters = values_of(planned)
        assert sorted(got) == sorted(values), "every record of the range, read on kafka-b, once"
        assert clusters == {"kafka-b"}
        stored = read_versioned(center, center.keys.replan(group, "b-1", 0))
        assert stored.value is not None and b"kafka-b" in stored.value, "the re-plan is kept for replays"
        again, _ = values_of(planned)
        assert again == got, "a replay of the task reads exactly the same"
    finally:
        refcluster.restart("kafka-a")


def test_a_pulsar_task_whose_cluster_died_reads_on_the_new_cluster_and_its_replay_reads_the_same(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = registered_topic(refcluster, center, "spr")
    values = [f"v{i}" for i in range(60)]
    send(refcluster, namespace, topic, values)
    b = refcluster.cluster_spec("pulsar-b")
    wait_for(lambda: values_on(b.url, topic) >= set(values), timeout=60, what="the copy on pulsar-b")
    group = f"q-{uuid.uuid4().hex[:6]}"
    options = parse_options({"hotstandby.route": "payments", "hotstandby.etcd": f"127.0.0.1:{refcluster.ports.etcd}",
                             "hotstandby.namespace": namespace, "hotstandby.group": group, "topic": topic,
                             "kafkaConsumer.pollTimeoutMs": "20000",
                             "pulsar.client.operation_timeout_seconds": "5"}, streaming=True)  # fmt: skip
    a = center.cluster("pulsar-a")
    last = PulsarCluster(a, options)
    try:
        end = last.last_ids([topic])[topic]
    finally:
        last.close()
    planned = PulsarReadTask(a, options, center.route("payments").epoch, topic, topic, 0, "", end, "b-1", 0)
    refcluster.kill("pulsar-a")
    try:
        center.switch("payments", "pulsar-b", reason="test: pulsar-a died under a batch")
        got, clusters = values_of(planned)
        assert sorted(got) == sorted(values), "every message of the range, read on pulsar-b, once"
        assert clusters == {"pulsar-b"}
        again, _ = values_of(planned)
        assert again == got, "a replay of the task reads exactly the same"
    finally:
        refcluster.restart("pulsar-a")


def send_unbatched(rc: RefCluster, namespace: str, topic: str, values: list[str]) -> None:
    """Unbatched: pulsar-client shows a copy's source position only on unbatched messages."""
    client = Client("payments", etcd=f"127.0.0.1:{rc.ports.etcd}", namespace=namespace,
                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for v in values:
            producer.send(v.encode())
    finally:
        client.close()


def copies_on(url: str, topic: str, cluster: str) -> list[tuple[str, CopyMark, str]]:
    """The replicated copies on ``topic`` of ``url``: (their origin key, mark, message id text)."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while reader.has_message_available():
            msg = reader.read_next(timeout_millis=5000)
            props = msg.properties()
            rid, position = identity_in(props, msg), props.get(REPL_SOURCE_POSITION)
            if rid is not None and position is not None:
                ledger, entry = (int(n) for n in position.split(":"))
                key = props.get(REPLICATED_FROM) or read_on(cluster)
                out.append((key, CopyMark(ledger, entry, rid), id_text(msg.message_id())))
        return out
    except pulsar.UnknownError:  # pulsar-lite, for a topic nothing was written to yet
        return []
    finally:
        client.close()


@pytest.mark.real_tier_only  # 45 s on the lite cluster
def test_a_pulsar_task_that_moves_starts_after_the_newest_copy_the_query_read(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """The query read pulsar-b's messages as copies on pulsar-a (committed batches); a task of
    pulsar-a's own messages whose cluster dies reads pulsar-b from its newest original on, not
    from the first message."""
    topic = registered_topic(refcluster, center, "spc")
    a, b = center.cluster("pulsar-a"), center.cluster("pulsar-b")
    center.switch("payments", "pulsar-b", reason="test: written on pulsar-b first")
    from_b = [f"b{i}" for i in range(40)]
    send_unbatched(refcluster, namespace, topic, from_b)
    wait_for(lambda: len(copies_on(a.url, topic, "pulsar-a")) >= len(from_b), timeout=60,
             what="pulsar-b's messages copied to pulsar-a")  # fmt: skip
    center.switch("payments", "pulsar-a", reason="test: then on pulsar-a")
    from_a = [f"a{i}" for i in range(30)]
    send_unbatched(refcluster, namespace, topic, from_a)
    wait_for(lambda: values_on(b.url, topic) >= set(from_a), timeout=60, what="the copy on pulsar-b")

    copies = copies_on(a.url, topic, "pulsar-a")
    key, newest, last_copy = copies[-1]
    group = f"q-{uuid.uuid4().hex[:6]}"
    staged = StagedAcks(center, group)  # committed batches emitted the copies
    staged.stage("b-0", 0, StagedPart.of(topic, 0, [mark.identity for _, mark, _ in copies]))
    staged.commit("b-0")
    options = parse_options({"hotstandby.route": "payments", "hotstandby.etcd": f"127.0.0.1:{refcluster.ports.etcd}",
                             "hotstandby.namespace": namespace, "hotstandby.group": group, "topic": topic,
                             "kafkaConsumer.pollTimeoutMs": "20000",
                             "pulsar.client.operation_timeout_seconds": "5"}, streaming=True)  # fmt: skip
    last = PulsarCluster(a, options)
    try:
        end = last.last_ids([topic])[topic]
    finally:
        last.close()
    planned = PulsarReadTask(a, options, center.route("payments").epoch, topic, topic, 0, last_copy, end, "b-1", 0,
                             ((key, newest.text()),))  # fmt: skip
    refcluster.kill("pulsar-a")
    try:
        center.switch("payments", "pulsar-b", reason="test: pulsar-a died under a batch")
        got, clusters = values_of(planned)
        assert sorted(got) == sorted(from_a), "pulsar-a's messages of the range, read on pulsar-b, once"
        assert clusters == {"pulsar-b"}
        plan = Replans(center, group).get("b-1", 0)
        assert plan is not None and dict(plan.strategies) == {"replicated-source-position": 1}
        again, _ = values_of(planned)
        assert again == got, "a replay of the task reads exactly the same"
    finally:
        refcluster.restart("pulsar-a")
