"""The ``hotstandby`` Spark source where production runs it: on a standalone Spark cluster (a
master and a worker started from pyspark's launchers; executors in JVMs of their own, with
their own Python workers) and from a Spark Connect client. Each driver is a process of its
own (``tests/integration/spark_driver.py``, the drill's job): a process holds one Spark context."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import logical_topic_with_twins
from tests.integration.test_drill import drill

pytest.importorskip("pyspark")

pytestmark = [pytest.mark.apache, pytest.mark.real_tier_only]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from hotstandby.refcluster.spark_servers import SparkStandalone

    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-standalone")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from hotstandby.refcluster.spark_servers import SparkConnectServer

    server = SparkConnectServer(tmp_path_factory.mktemp("spark-connect")).start()
    try:
        yield server
    finally:
        server.stop()


def _logical_topic(rc: RefCluster, center: ConfigCenter, namespace: str) -> tuple[str, list[str]]:
    topic = f"sc-{uuid.uuid4().hex[:8]}"
    return topic, logical_topic_with_twins(rc, center, namespace, topic, before=60, after=30, twins=15)


def _read(rc: RefCluster, namespace: str, topic: str, *where: str) -> dict[str, list[str]]:
    """What a driver of its own (``where``: ``--master URL`` or ``--remote URL`` [``--stream``])
    read of ``topic`` through the source."""
    options = {**rc.client_config("app"), "hotstandby.route": "orders", "hotstandby.namespace": namespace,
               "subscribe": topic, "startingOffsets": "earliest"}  # fmt: skip
    if "--stream" in where:
        options["hotstandby.group"] = f"read-{uuid.uuid4().hex[:8]}"  # a streaming query's ledger
    done = subprocess.run([sys.executable, "-m", "tests.integration.spark_driver", *where, "--options",
                           json.dumps(options)], cwd=ROOT, capture_output=True, text=True, timeout=420, check=False)  # fmt: skip
    assert done.returncode == 0, f"the driver failed:\n{done.stderr[-4000:]}"
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_batch_read_on_a_standalone_cluster_returns_every_record_once(
    standalone: object, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic, expected = _logical_topic(refcluster, center, namespace)
    read = _read(refcluster, namespace, topic, "--master", standalone.url)  # type: ignore[attr-defined]
    assert read["values"] == sorted(expected), "the logical stream, each record once"
    assert read["clusters"] == ["kafka-b"]


def test_a_streaming_query_on_a_standalone_cluster_follows_flips_and_a_driver_kill_exactly_once(
    standalone: object, refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Spark drill with its query on the standalone cluster: two flips, the driver
    SIGKILLed before the second and started again from its checkpoint."""
    url = standalone.url  # type: ignore[attr-defined]
    code, report = drill(refcluster, capsys, "--system", "spark", "--messages", "2000", "--switches", "2",
                         "--rate", "200", "--timeout", "360", "--spark-master", url)  # fmt: skip
    assert (report["produced"], report["consumed"]) == (2000, 2000)
    assert (report["lost"], report["duplicated"]) == (0, 0)
    assert code == 0 and report["ok"]
    assert "driver SIGKILLed before switch 2 and restarted from its checkpoint" in report["phase"]
    ran = [app["name"] for app in standalone.applications()]  # type: ignore[attr-defined]
    assert ran.count("hotstandby-drill") == 2, f"the query and its restart ran on the cluster: {ran}"


def test_a_spark_connect_client_reads_the_source_in_batch_and_as_a_stream(
    connect: object, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic, expected = _logical_topic(refcluster, center, namespace)
    url = connect.url  # type: ignore[attr-defined]
    batch = _read(refcluster, namespace, topic, "--remote", url)
    assert batch["values"] == sorted(expected), "a batch read through Spark Connect: each record once"
    stream = _read(refcluster, namespace, topic, "--remote", url, "--stream")
    assert stream["values"] == sorted(expected), "a streaming read through Spark Connect: each record once"
    assert batch["clusters"] == stream["clusters"] == ["kafka-b"]
