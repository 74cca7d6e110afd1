"""Pulsar in the reference cluster: two pulsar-lite brokers (``pulsar-a``, ``pulsar-b``, route
``payments``) and the geo-replication stand-in between them (one process per direction)."""

from __future__ import annotations

from pathlib import Path

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.refcluster.binaries import LiteBrokers, find_binaries
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.replicators import REFCLUSTER_INTERVALS, lite_flow, replicator_name
from hotstandby.refcluster.replicators.pulsar.config import PulsarFlowConfig
from hotstandby.refcluster.system import HOST, BrokerOptions, FlowPlan

__all__ = ["PULSAR", "PULSAR_LITE_TOML", "PulsarSystem"]

# pulsar-lite starts a metrics HTTP server on 0.0.0.0:8080 unless told not to.
PULSAR_LITE_TOML = "[metrics]\nenabled = false\n"


class PulsarSystem(LiteBrokers):
    kind = "pulsar"
    brokers = ("pulsar-a", "pulsar-b")
    route = "payments"

    def url(self, port: int) -> str:
        return f"pulsar://{HOST}:{port}"

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        return ClusterSpec(name=component, kind=self.kind, url=self.url(port))

    def link(self, source: str, target: str) -> Link:
        # Geo-replication keeps topic names.
        return Link(source=source, target=target, policy="identity", replicator="hotstandby-refcluster")

    def broker_argv(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> list[str]:
        port, bins = ports.of(component), find_binaries()
        config = directory / f"{component}.toml"
        config.write_text(f"default_partitions = {options.pulsar_partitions}\n{PULSAR_LITE_TOML}")
        return [
            bins.pulsar_lite, "--config", str(config), "--addr", f"{HOST}:{port}",
            "--db-path", str(directory / f"{component}-data"), "--log-level", "warn",
        ]  # fmt: skip

    def flow(
        self,
        source: ClusterSpec,
        target: ClusterSpec,
        link: Link,
        *,
        etcd: str,
        namespace: str,
        directory: Path,
        options: BrokerOptions,
    ) -> FlowPlan:
        """Topics come from the config center's registry (pulsar-lite cannot list them)."""

        def config(status: Path) -> str:
            return PulsarFlowConfig(
                source_alias=source.name,
                source_url=source.url,
                target_alias=target.name,
                target_url=target.url,
                etcd=etcd,
                config_namespace=namespace,
                refresh_topics=REFCLUSTER_INTERVALS["refresh_topics"],
                status_path=str(status),
            ).to_json()

        name = replicator_name(source.name, target.name)
        return lite_flow(directory, name, "hotstandby.refcluster.replicators.pulsar", config)


PULSAR = PulsarSystem()
