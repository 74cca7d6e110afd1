"""A switch inside a micro-batch: an executor's task whose planned cluster is SIGKILLed reads
its partitions on the cluster the route moved to, and a replay of the task reads the same."""

from __future__ import annotations

import uuid

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.versioned import read_versioned
from hotstandby.refcluster import RefCluster
from hotstandby.spark_integration.kafka_read import ReadTask, read_task
from hotstandby.spark_integration.options import parse_options
from hotstandby.spark_integration.planning import Range, Task
from tests.integration.kafka_helpers import create_topic, produce_values
from tests.integration.test_spark_source import replicated

pytestmark = pytest.mark.integration


def values_of(task: ReadTask) -> tuple[list[str], set[str]]:
    rows = [batch.to_pydict() for batch in read_task(task)]
    return [v.decode() for r in rows for v in r["value"]], {c for r in rows for c in r["cluster"]}


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
