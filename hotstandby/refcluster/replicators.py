"""The reference cluster's replicators: one process per direction and system.

The Kafka flows behave as MirrorMaker 2 (DefaultReplicationPolicy, offset syncs on the
source, checkpoints and heartbeats on the target) with shorter intervals than MM2's defaults
so tests and the drill see checkpoints within seconds; ``refcluster status`` lists every
interval that differs from MM2's default.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.refcluster.flow_status import read_status

__all__ = [
    "FLOWS",
    "KAFKA_FLOWS",
    "PULSAR_FLOWS",
    "REFCLUSTER_INTERVALS",
    "NotReady",
    "check_ready",
    "kafka_flow_config",
    "pulsar_flow_config",
    "replicator_name",
]

KAFKA_FLOWS = (("kafka-a", "kafka-b"), ("kafka-b", "kafka-a"))
PULSAR_FLOWS = (("pulsar-a", "pulsar-b"), ("pulsar-b", "pulsar-a"))
FLOWS = KAFKA_FLOWS + PULSAR_FLOWS

# Seconds. MM2's defaults: checkpoints 60, heartbeats 1, offset flush 60, topic and group refresh 600.
REFCLUSTER_INTERVALS: dict[str, float] = {
    "emit_checkpoints": 1.0,
    "emit_heartbeats": 1.0,
    "offset_flush": 1.0,
    "refresh_topics": 1.0,
    "refresh_groups": 1.0,
}


class NotReady(Exception):
    """A replicator has not reported ``running`` yet."""


def replicator_name(source: str, target: str) -> str:
    return f"mirror-{source}-to-{target}"


def _endpoint(spec: ClusterSpec) -> dict[str, Any]:
    return {
        "alias": spec.name,
        "bootstrap": spec.url,
        "producer": spec.client_config("producer"),
        "consumer": spec.client_config("consumer"),
    }


def kafka_flow_config(source: ClusterSpec, target: ClusterSpec, link: Link, directory: Path) -> tuple[Path, list[str]]:
    """Write the flow's config file; returns its path and the command line that runs it."""
    from hotstandby.adapters.kafka.replicator.config import Endpoint, FlowConfig, Intervals

    name = replicator_name(source.name, target.name)
    directory.mkdir(parents=True, exist_ok=True)
    config = FlowConfig(
        source=Endpoint(**_endpoint(source)),
        target=Endpoint(**_endpoint(target)),
        policy=link.policy,
        separator=link.separator,
        offset_syncs_location=link.offset_syncs,
        intervals=Intervals(**REFCLUSTER_INTERVALS),
        status_path=str(directory / f"{name}.status.json"),
    )
    path = directory / f"{name}.json"
    path.write_text(config.to_json())
    return path, [sys.executable, "-m", "hotstandby.adapters.kafka.replicator", "--config", str(path)]


def pulsar_flow_config(
    source: ClusterSpec, target: ClusterSpec, etcd: str, namespace: str, directory: Path
) -> tuple[Path, list[str]]:
    """Write a Pulsar flow's config file; topics come from the config center's registry."""
    from hotstandby.adapters.pulsar.replicator.config import PulsarFlowConfig

    name = replicator_name(source.name, target.name)
    directory.mkdir(parents=True, exist_ok=True)
    config = PulsarFlowConfig(
        source_alias=source.name,
        source_url=source.url,
        target_alias=target.name,
        target_url=target.url,
        etcd=etcd,
        config_namespace=namespace,
        refresh_topics=REFCLUSTER_INTERVALS["refresh_topics"],
        status_path=str(directory / f"{name}.status.json"),
    )
    path = directory / f"{name}.json"
    path.write_text(config.to_json())
    return path, [sys.executable, "-m", "hotstandby.adapters.pulsar.replicator", "--config", str(path)]


def status_path(config_path: str | Path) -> Path:
    return Path(str(config_path)).with_suffix(".status.json")


def check_ready(config_path: str | Path) -> None:
    status = read_status(status_path(config_path))
    if not status or status.get("state") != "running":
        raise NotReady(f"{status_path(config_path)}: {status.get('state') if status else 'no status yet'}")
