"""Kafka in the reference cluster: two Tansu brokers (``kafka-a``, ``kafka-b``, route
``orders``) and the MirrorMaker 2 replacement between them (one process per direction)."""

from __future__ import annotations

from pathlib import Path

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.refcluster.binaries import LiteBrokers, find_binaries
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.replicators import REFCLUSTER_INTERVALS, lite_flow, replicator_name
from hotstandby.refcluster.replicators.kafka.config import Endpoint, FlowConfig, Intervals
from hotstandby.refcluster.system import HOST, BrokerOptions, FlowPlan

__all__ = ["KAFKA", "KAFKA_OVERRIDES", "KafkaSystem"]

# Client settings the bundled brokers need (DESIGN §5), stored in their cluster definitions:
# * Tansu advances the high watermark by one per produced batch, so producers send one
#   record per batch to keep end offsets right;
# * Tansu completes a group join after about session.timeout.ms / 2, so a short session
#   timeout keeps subscribe() and a switch's join fast (4 s -> about 2 s; heartbeats every
#   second keep a member well inside it);
# * Tansu answers a fetch only when fetch.wait.max.ms has passed, even when records arrived
#   (median delivery 200 ms at librdkafka's 500 ms default, about 1 ms at 50 ms).
KAFKA_OVERRIDES: dict[str, dict[str, str | int]] = {
    "producer": {"batch.num.messages": 1},
    "consumer": {"session.timeout.ms": 4000, "heartbeat.interval.ms": 1000, "fetch.wait.max.ms": 50},
}


def _endpoint(spec: ClusterSpec) -> Endpoint:
    return Endpoint(
        alias=spec.name,
        bootstrap=spec.url,
        producer=spec.client_config("producer"),
        consumer=spec.client_config("consumer"),
        admin=spec.client_config("admin"),
    )


class KafkaSystem(LiteBrokers):
    kind = "kafka"
    brokers = ("kafka-a", "kafka-b")
    route = "orders"
    relayable = True  # Tansu binds one address and advertises another

    def url(self, port: int) -> str:
        return f"{HOST}:{port}"

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        return ClusterSpec(name=component, kind=self.kind, url=self.url(port), **KAFKA_OVERRIDES)

    def link(self, source: str, target: str) -> Link:
        # MM2's default naming (DefaultReplicationPolicy: remote topics "<source>.<topic>").
        return Link(source=source, target=target, policy="prefix", replicator="hotstandby-refcluster")

    def broker_argv(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> list[str]:
        port, bins = ports.of(component), find_binaries()
        url, listen = f"tcp://{HOST}:{port}", options.listen.get(component, port)
        return [
            bins.tansu, "broker", "--listener-url", f"tcp://{HOST}:{listen}", "--advertised-listener-url", url,
            "--cluster-id", component, "--storage-engine", "memory://tansu/",
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
        def config(status: Path) -> str:
            return FlowConfig(
                source=_endpoint(source),
                target=_endpoint(target),
                policy=link.policy,
                separator=link.separator,
                offset_syncs_location=link.offset_syncs,
                intervals=Intervals(**REFCLUSTER_INTERVALS),
                status_path=str(status),
            ).to_json()

        name = replicator_name(source.name, target.name)
        return lite_flow(directory, name, "hotstandby.refcluster.replicators.kafka", config)


KAFKA = KafkaSystem()
