"""A switch inside a micro-batch: an executor's task whose planned cluster is SIGKILLed reads
its partitions on the cluster the route moved to, and a replay of the task reads the same."""

from __future__ import annotations

import uuid

import pulsar
import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.versioned import read_versioned
from hotstandby.refcluster import RefCluster
from hotstandby.spark_integration.cluster_plan import ReadsPartition
from hotstandby.spark_integration.kafka_read import ReadTask
from hotstandby.spark_integration.options import parse_options
from hotstandby.spark_integration.planning import Range, Task
from hotstandby.spark_integration.pulsar_cluster import PulsarCluster
from hotstandby.spark_integration.pulsar_read import PulsarReadTask
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
    topic = f"persistent://public/default/spr-{uuid.uuid4().hex[:8]}"
    for cluster in ("pulsar-a", "pulsar-b"):
        center.register_topic(cluster, topic)
    with ConfigCenter.open(refcluster.settings()) as shared:  # the replicators read the default namespace
        for cluster in ("pulsar-a", "pulsar-b"):
            shared.register_topic(cluster, topic)
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
