"""Reference-cluster configuration logic (no processes)."""

from __future__ import annotations

import pathlib

import pytest

from hotstandby.errors import ValidationError
from hotstandby.refcluster import Ports, RefCluster


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
    argv = RefCluster(tmp_path, Ports())._argv(component, Ports())
    for flag in LISTEN_FLAGS[component]:
        value = argv[argv.index(flag) + 1]
        host = value.split("//")[-1].rsplit(":", 1)[0]
        assert host == "127.0.0.1", (flag, value)


def test_pulsar_lite_metrics_server_is_disabled_and_partitions_are_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    argv = RefCluster(tmp_path, Ports())._argv("pulsar-b", Ports())
    config = argv[argv.index("--config") + 1]
    assert pathlib.Path(config).read_text() == "default_partitions = 0\n[metrics]\nenabled = false\n"
    argv = RefCluster(tmp_path, Ports(), pulsar_partitions=3)._argv("pulsar-a", Ports())
    assert pathlib.Path(argv[argv.index("--config") + 1]).read_text().startswith("default_partitions = 3\n")


def test_kafka_clusters_carry_the_broker_overrides(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = RefCluster(tmp_path).cluster_spec("kafka-b")
    assert spec.client_config("producer")["batch.num.messages"] == 1
    assert spec.client_config("consumer")["session.timeout.ms"] == 4000
    assert spec.client_config("consumer")["fetch.wait.max.ms"] == 50
