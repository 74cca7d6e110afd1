"""Apache Kafka in the apache reference cluster: two single-node KRaft clusters (``kafka-a``,
``kafka-b``, route ``orders``) and MirrorMaker 2 in dedicated mode, one process per direction
(``mirror-kafka-a-to-kafka-b`` runs the flows whose target is kafka-b).

Settings chosen for tests (``tuning="test"``) and with production settings
(``tuning="production"``, ``refcluster up --settings production``), beside the defaults
(docs/refcluster.md):

================================================  ====  ==========  =================
setting                                           test  production  default
================================================  ====  ==========  =================
broker ``group.initial.rebalance.delay.ms``       0     3000        3000
broker replication factors, min ISR               1     1           3 / 2
broker ``broker.session.timeout.ms``              3000  9000        9000
MM2 ``emit.checkpoints.interval.seconds``         1     60          60
MM2 ``sync.group.offsets.interval.seconds``       1     60          60
MM2 ``refresh.groups.interval.seconds``           1     600         600
MM2 ``refresh.topics.interval.seconds``           1     10          600
MM2 ``emit.heartbeats.interval.seconds``          1     1           1
MM2 ``offset.lag.max``                            100   100         100
MM2 ``offset.flush.interval.ms``                  1000  60000       60000
================================================  ====  ==========  =================

With production settings MM2 still looks for new topics every 10 s: tests and drills create a
topic per run, where a production cluster has its topics before MirrorMaker 2 starts. A group
MM2 has not found yet (the first 600 s) gets no checkpoints: consumers translate through the
offset syncs, or by timestamp.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.errors import RefClusterError
from hotstandby.refcluster.jars import JarSet, java_argv
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.replicators import NotReady, replicator_name
from hotstandby.refcluster.system import HOST, BrokerOptions, FlowPlan

__all__ = ["APACHE_KAFKA", "ApacheKafkaSystem"]

_BROKER_HEAP = "384m"
_MM2_HEAP = "256m"
_FORMAT_TIMEOUT_S = 120.0

_BROKER_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # The log cleaner takes this buffer from the heap up front (128 MiB by default).
    "log.cleaner.dedupe.buffer.size": "16777216",
}
_TEST_BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    # A node restarted after SIGKILL registers again only once its old session expired.
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "1000",
}

_MM2_SETTINGS = {
    "topics": ".*",
    "groups": ".*",
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "emit.checkpoints.enabled": "true",
    "sync.group.offsets.enabled": "true",
    "emit.heartbeats.enabled": "true",
    "emit.heartbeats.interval.seconds": "1",
    "sync.topic.acls.enabled": "false",
    "replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
    "heartbeats.topic.replication.factor": "1",
    "offset-syncs.topic.replication.factor": "1",
    "offset.storage.replication.factor": "1",
    "config.storage.replication.factor": "1",
    "status.storage.replication.factor": "1",
    "dedicated.mode.enable.internal.rest": "false",
    # Connect's reflective plugin scan costs seconds per herder; every plugin here has a
    # ServiceLoader manifest.
    "plugin.discovery": "service_load",
}
_MM2_INTERVALS = {
    "test": {
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.interval.seconds": "1",
        # Offset syncs held back by offset.lag.max are written at the task's offset commit.
        "offset.flush.interval.ms": "1000",
    },
    "production": {"refresh.topics.interval.seconds": "10"},  # see the module doc
}

# Worker settings a herder reads from its clusters' own keys only.
_PER_HERDER = ("plugin.discovery", "offset.flush.interval.ms")


def jars(options: BrokerOptions) -> JarSet:
    """Apache Kafka's jars, of the version ``options`` ask for (else the shipped pom's)."""
    return JarSet("kafka", options.versions.get("kafka", ""))


def _properties(settings: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class ApacheKafkaSystem:
    kind = "kafka"
    brokers = ("kafka-a", "kafka-b")
    route = "orders"
    replicator_processes = True
    relayable = False

    def port_names(self, component: str) -> tuple[str, ...]:
        name = component.replace("-", "_")
        return (name, f"{name}_controller")

    def url(self, port: int) -> str:
        return f"{HOST}:{port}"

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        # Apache Kafka needs none of the look-alike's client overrides.
        return ClusterSpec(name=component, kind=self.kind, url=self.url(port))

    def link(self, source: str, target: str) -> Link:
        # MM2's DefaultReplicationPolicy; offset syncs on the source cluster (MM2's default).
        return Link(source=source, target=target, policy="prefix", offset_syncs="source", replicator="mirrormaker2")

    def prepare(self, directory: Path, progress: Callable[[str], None] | None, options: BrokerOptions) -> None:
        jars(options).resolve(progress=progress)

    def broker_env(self) -> dict[str, str]:
        return {}

    def check_serving(self, component: str, ports: Ports) -> None:
        """Serving once it answers its protocol."""

    def _config(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> Path:
        client, controller = (ports.of(name) for name in self.port_names(component))
        settings = {
            **_BROKER_SETTINGS,
            **(_TEST_BROKER_SETTINGS if options.tuning == "test" else {}),
            "controller.quorum.bootstrap.servers": f"{HOST}:{controller}",
            "listeners": f"PLAINTEXT://{HOST}:{client},CONTROLLER://{HOST}:{controller}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{client}",
            "log.dirs": str(directory / f"{component}-data"),
        }
        path = directory / "config" / f"{component}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_properties(settings))
        return path

    def broker_argv(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> list[str]:
        config = self._config(component, ports, directory, options)
        # KRaft storage is formatted once, before the first start (a restart keeps it).
        fmt = java_argv(jars(options), "kafka.tools.StorageTool", "format", "--standalone", "--ignore-formatted",
                        "-t", _cluster_id(component), "-c", str(config), heap="128m",
                        flags=("-XX:TieredStopAtLevel=1",))  # fmt: skip
        done = subprocess.run(fmt, capture_output=True, text=True, timeout=_FORMAT_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RefClusterError(f"formatting {component}'s storage failed: {done.stdout}{done.stderr}")
        return java_argv(jars(options), "kafka.Kafka", str(config), heap=_BROKER_HEAP)

    def configure(self, ports: Ports, directory: Path) -> None:
        """Nothing: MirrorMaker 2 runs as processes of its own."""

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
        mm2 = {**_MM2_SETTINGS, **_MM2_INTERVALS[options.tuning]}
        settings = {
            "clusters": f"{source.name}, {target.name}",
            f"{source.name}.bootstrap.servers": source.url,
            f"{target.name}.bootstrap.servers": target.url,
            f"{source.name}->{target.name}.enabled": "true",
            f"{target.name}->{source.name}.enabled": "false",
            **mm2,
            # A herder's worker configuration comes from its target cluster's own keys.
            **{f"{alias}.{key}": mm2[key] for alias in (source.name, target.name) for key in _PER_HERDER if key in mm2},
        }
        name = replicator_name(source.name, target.name)
        path = directory / f"{name}.properties"
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(_properties(settings))
        argv = java_argv(jars(options), "org.apache.kafka.connect.mirror.MirrorMaker", str(path), "--clusters", target.name,
                         heap=_MM2_HEAP)  # fmt: skip
        return FlowPlan(argv=argv, ready=lambda started_at: _heartbeat_since(target, started_at), retry_on=(NotReady,))


def _cluster_id(component: str) -> str:
    # A KRaft cluster id is a UUID in URL-safe base64 (22 characters), fixed per broker.
    raw = uuid.uuid5(uuid.NAMESPACE_URL, f"hotstandby-refcluster/{component}").bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _heartbeat_since(target: ClusterSpec, started_at: float) -> None:
    """The flow to ``target`` runs once its heartbeat connector wrote ``heartbeats`` there
    after ``started_at`` (a restarted process: after its restart)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition  # the kafka extra, as MM2 needs it

    consumer = Consumer({"bootstrap.servers": target.url, "group.id": "hotstandby-refcluster-ready",
                         "enable.auto.commit": False, "log_level": 0})  # fmt: skip
    try:
        partition = TopicPartition("heartbeats", 0)
        low, high = consumer.get_watermark_offsets(partition, timeout=2.0)
        if high <= low:
            raise NotReady(f"no heartbeat on {target.name} yet")
        consumer.assign([TopicPartition("heartbeats", 0, high - 1)])
        msg = consumer.poll(2.0)
        if msg is None or msg.error() is not None:
            raise NotReady(f"the last heartbeat on {target.name} could not be read")
        if msg.timestamp()[1] / 1000.0 < started_at:
            raise NotReady(f"no heartbeat on {target.name} since the start")
    except KafkaException as exc:
        raise NotReady(f"{target.name}: {exc}") from None
    finally:
        consumer.close()


APACHE_KAFKA = ApacheKafkaSystem()
