"""The reference cluster started secure (``refcluster up --secure``: etcd with TLS and
authentication, a user per role): the drill of every system, the CLI's flips by role, and the
Spark source's executors, each as the user its role gives it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from hotstandby.cli import main
from hotstandby.cli.drill_cmd import DEFAULT_SPARK_MESSAGES
from hotstandby.configcenter import ConfigCenter
from hotstandby.drill import DrillOptions, DrillReport
from hotstandby.errors import ConfigCenterError
from hotstandby.refcluster import Ports, RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values
from tests.integration.test_drill import drill

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secure_refcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    with RefCluster(tmp_path_factory.mktemp("secure-refcluster"), Ports.free(), secure=True) as rc:  # up ... down
        yield rc


def test_a_secure_cluster_refuses_whoever_has_no_credentials(secure_refcluster: RefCluster) -> None:
    assert secure_refcluster.secure and secure_refcluster.settings().etcd_security.tls
    anonymous = secure_refcluster.etcd_access().settings("/hotstandby", None)
    with ConfigCenter.open(anonymous) as center, pytest.raises(ConfigCenterError, match="user name is empty"):
        center.routes()
    app = secure_refcluster.settings("app")
    with ConfigCenter.open(app) as center:
        assert center.route("orders").active == "kafka-a"


def test_drill_without_a_system_on_a_secure_cluster_drills_every_system_as_app_and_sre(
    secure_refcluster: RefCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hotstandby drill --secure``: Kafka and Pulsar for real, the clients as ``app``, the
    flips as ``sre``, the replicators as ``replicator``; the Spark part (drilled for real in
    test_drill.py; a Spark session takes half a minute to start, twice) is stood in for, to see
    that it comes third and short."""
    import hotstandby.drill.spark

    asked: list[DrillOptions] = []

    def spark_part(rc: RefCluster, options: DrillOptions, progress: object = None) -> DrillReport:
        asked.append(options)
        return DrillReport("spark", options.messages, options.messages, 0, 0, 0, 0, 0, 0, 0, 1, 0.0)

    monkeypatch.setattr(hotstandby.drill.spark, "run", spark_part)
    # Short and faster than the default pace: the flips still fall mid-stream (at 200 and 400
    # records); test_drill.py drills each system at length.
    code, out = drill(secure_refcluster, capsys, "--secure", "--messages", "600", "--switches", "2",
                      "--rate", "300", "--timeout", "180")  # fmt: skip
    assert [r["system"] for r in out["reports"]] == ["kafka", "pulsar", "spark"]
    assert [(r["produced"], r["lost"], r["duplicated"]) for r in out["reports"][:2]] == [(600, 0, 0), (1200, 0, 0)]
    assert [p["produced"] for p in out["reports"][1]["phases"]] == [600, 600]
    assert [o.messages for o in asked] == [min(600, DEFAULT_SPARK_MESSAGES)]
    assert code == 0 and out["ok"]
    kafka = out["reports"][0]
    with ConfigCenter.open(replace(secure_refcluster.settings(), namespace=kafka["namespace"])) as center:
        route = center.route("orders")
    assert (route.epoch, route.by) == (3, "sre"), "flipped twice, by the authenticated sre user"


def test_an_application_user_cannot_flip_a_route_and_an_sre_can(
    secure_refcluster: RefCluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = f"/hs-secure-{uuid.uuid4().hex[:8]}"
    secure_refcluster.register(namespace)
    access = secure_refcluster.etcd_access()
    where = ["--etcd", access.url, "--etcd-ca", str(access.ca), "--namespace", namespace]

    def switch_as(user: str, to: str) -> tuple[int, str]:
        monkeypatch.setenv("HOTSTANDBY_ETCD_PASSWORD_FILE", str(access.password_file(user)))
        code = main(["switch", "orders", "--to", to, "--etcd-user", user, *where])
        return code, capsys.readouterr().err

    code, err = switch_as("app", "kafka-b")
    assert code != 0 and "permission denied" in err
    assert switch_as("sre", "kafka-b")[0] == 0
    with ConfigCenter.open(replace(secure_refcluster.settings("app"), namespace=namespace)) as center:
        route = center.route("orders")
    assert (route.active, route.by) == ("kafka-b", "sre")


def test_the_spark_source_reads_as_the_application_user(
    spark: Any, secure_refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """Driver and executors reach etcd with the CA and the password file the options name."""
    namespace = f"/hs-secure-{uuid.uuid4().hex[:8]}"
    secure_refcluster.register(namespace)
    topic = f"ss-{uuid.uuid4().hex[:8]}"
    create_topic(secure_refcluster.cluster_spec("kafka-a"), topic, 2)
    values = [f"v{i}" for i in range(30)]
    produce_values(secure_refcluster, namespace, topic, values)
    options = {**secure_refcluster.client_config("app"), "hotstandby.route": "orders",
               "hotstandby.namespace": namespace, "subscribe": topic}  # fmt: skip
    rows = spark.read.format("hotstandby").options(**options).load().select("value").collect()
    assert sorted(bytes(r.value).decode() for r in rows) == sorted(values)
