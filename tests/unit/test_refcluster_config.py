"""Reference-cluster configuration logic (no processes)."""

from __future__ import annotations

import pathlib

import pytest

from hotstandby.errors import ValidationError
from hotstandby.refcluster import Ports, RefCluster
from hotstandby.refcluster.launch import Launcher


def test_default_ports_are_the_documented_ones() -> None:
    p = Ports()
    assert (p.etcd, p.etcd_peer, p.kafka_a, p.kafka_b, p.pulsar_a, p.pulsar_b) == (2379, 2380, 9092, 9093, 6650, 6651)


def test_ports_can_be_overridden_by_component_name() -> None:
    p = Ports().with_overrides({"kafka-a": 19092, "etcd_peer": 12380})
    assert (p.kafka_a, p.etcd_peer, p.kafka_b) == (19092, 12380, 9093)
    with pytest.raises(ValidationError, match="unknown port name 'kafka-c'"):
        Ports().with_overrides({"kafka-c": 1})
    with pytest.raises(ValidationError, match="not a TCP port"):
        Ports().with_overrides({"etcd": 70000})


def test_free_ports_are_distinct() -> None:
    p = Ports.free()
    values = [p.etcd, p.etcd_peer, p.kafka_a, p.kafka_b, p.pulsar_a, p.pulsar_b]
    assert len(set(values)) == 6


LISTEN_FLAGS = {
    "etcd": ("--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls", "--initial-advertise-peer-urls"),
    "kafka-a": ("--listener-url", "--advertised-listener-url"),
    "pulsar-a": ("--addr",),
}


@pytest.mark.parametrize("component", sorted(LISTEN_FLAGS))
def test_every_listen_address_is_loopback(tmp_path, component: str) -> None:  # type: ignore[no-untyped-def]
    argv = Launcher(RefCluster(tmp_path, Ports())).argv(component, Ports())
    for flag in LISTEN_FLAGS[component]:
        value = argv[argv.index(flag) + 1]
        host = value.split("//")[-1].rsplit(":", 1)[0]
        assert host == "127.0.0.1", (flag, value)


def test_pulsar_lite_metrics_server_is_disabled_and_partitions_are_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    argv = Launcher(RefCluster(tmp_path, Ports())).argv("pulsar-b", Ports())
    config = argv[argv.index("--config") + 1]
    assert pathlib.Path(config).read_text() == "default_partitions = 0\n[metrics]\nenabled = false\n"
    argv = Launcher(RefCluster(tmp_path, Ports(), pulsar_partitions=3)).argv("pulsar-a", Ports())
    assert pathlib.Path(argv[argv.index("--config") + 1]).read_text().startswith("default_partitions = 3\n")


def test_kafka_clusters_carry_the_broker_overrides(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = RefCluster(tmp_path).cluster_spec("kafka-b")
    assert spec.client_config("producer")["batch.num.messages"] == 1
    assert spec.client_config("consumer")["session.timeout.ms"] == 4000
    assert spec.client_config("consumer")["fetch.wait.max.ms"] == 50


@pytest.mark.parametrize("tuning", ["test", "production"])
def test_apache_kafka_with_production_settings_keeps_the_systems_defaults(tmp_path, tuning: str) -> None:  # type: ignore[no-untyped-def]
    """Production settings: the broker's initial rebalance delay and session timeout, MM2's
    checkpoint, group sync, group refresh and offset flush intervals are the defaults; tests
    shorten them."""
    from hotstandby.refcluster.apache_kafka import APACHE_KAFKA
    from hotstandby.refcluster.system import BrokerOptions

    options = BrokerOptions(tuning=tuning)  # type: ignore[arg-type]
    broker = APACHE_KAFKA._config("kafka-a", Ports.free(), tmp_path, options).read_text()
    a, b = (APACHE_KAFKA.cluster_spec(name, port) for name, port in (("kafka-a", 1), ("kafka-b", 2)))
    flow = APACHE_KAFKA.flow(a, b, APACHE_KAFKA.link("kafka-a", "kafka-b"), etcd="", namespace="/hs",
                             directory=tmp_path, options=options)  # fmt: skip
    mm2 = (tmp_path / "mirror-kafka-a-to-kafka-b.properties").read_text()
    assert flow.argv
    shortened = {"group.initial.rebalance.delay.ms=0", "broker.session.timeout.ms=3000"}
    intervals = {"emit.checkpoints.interval.seconds=1", "sync.group.offsets.interval.seconds=1",
                 "refresh.groups.interval.seconds=1", "offset.flush.interval.ms=1000"}  # fmt: skip
    if tuning == "test":
        assert shortened <= set(broker.splitlines()) and intervals <= set(mm2.splitlines())
    else:
        assert not shortened & set(broker.splitlines()), broker
        assert not {line.split("=")[0] for line in intervals} & {line.split("=")[0] for line in mm2.splitlines()}, mm2
        assert "refresh.topics.interval.seconds=10" in mm2.splitlines()


def test_unknown_settings_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from hotstandby.errors import RefClusterError

    with pytest.raises(RefClusterError, match="unknown settings 'fast'"):
        RefCluster(tmp_path, brokers="apache", tuning="fast")  # type: ignore[arg-type]


def test_a_version_asked_for_names_the_jars_and_the_argv(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--kafka-version 3.9.1``: the pom resolved is the shipped one with that version, in a
    folder of its own; the processes run those jars."""
    from hotstandby.refcluster.apache_kafka import APACHE_KAFKA, jars
    from hotstandby.refcluster.jars import JarSet
    from hotstandby.refcluster.system import BrokerOptions

    shipped, asked = JarSet("kafka"), JarSet("kafka", "3.9.1")
    assert asked.version == "3.9.1" and shipped.version != "3.9.1"
    assert b"<kafka.version>3.9.1</kafka.version>" in asked.pom
    assert asked.directory() != shipped.directory()
    options = BrokerOptions(versions={"kafka": "3.9.1"})
    assert jars(options) == asked and jars(BrokerOptions()) == shipped
    monkeypatch.setenv("HOTSTANDBY_JARS_DIR", str(tmp_path / "jars"))
    resolved = asked.directory()
    resolved.mkdir(parents=True)
    (resolved / ".resolved").write_text("3.9.1\n")  # as Maven left it
    a, b = (APACHE_KAFKA.cluster_spec(name, port) for name, port in (("kafka-a", 1), ("kafka-b", 2)))
    flow = APACHE_KAFKA.flow(a, b, APACHE_KAFKA.link("kafka-a", "kafka-b"), etcd="", namespace="/hs",
                             directory=tmp_path, options=options)  # fmt: skip
    assert f"{resolved}/*" in flow.argv


@pytest.mark.parametrize("versions", [{"kafka": "latest"}, {"zookeeper": "3.9.1"}, {"pulsar": "3.0"}])
def test_unknown_versions_are_refused(tmp_path, versions: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    from hotstandby.errors import RefClusterError

    with pytest.raises(RefClusterError, match="not a version to run"):
        RefCluster(tmp_path, brokers="apache", versions=versions)
