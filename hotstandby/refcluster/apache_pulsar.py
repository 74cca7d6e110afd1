"""Apache Pulsar in the apache reference cluster: two standalone clusters (``pulsar-a``,
``pulsar-b``, route ``payments``), each a broker with an embedded bookie and a RocksDB metadata
store, replicating ``public/default`` both ways by geo-replication, replicated subscriptions on.

Geo-replication runs inside the brokers, so there are no replicator processes: once both
brokers answer, :meth:`ApachePulsarSystem.configure` registers each cluster in the other
through the admin REST API, lets tenant ``public`` use both and sets the namespace's
replication clusters. Settings chosen for tests, beside the production defaults, are listed in
docs/refcluster.md (one bookie, write and ack quorum 1, journal without fsync, small caches,
``replicatedSubscriptionsSnapshotFrequencyMillis`` 1000 as by default).

The standalone is started through ``java/EphemeralNodesDroppingStandalone.java`` (compiled once
against the jars): on a restart it first deletes the ephemeral nodes the earlier process left in
the RocksDB metadata store, as ZooKeeper does when a session ends. Left there after a SIGKILL,
the old bookie registration sends the new bookie's registration lock into an endless
revalidation loop about one restart in six (docs/refcluster.md, "Pulsar standalone after a
SIGKILL").
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import RefClusterError
from hotstandby.refcluster.jars import JarSet, JavaClasses, java_argv
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.system import HOST, BrokerOptions, FlowPlan

__all__ = ["APACHE_PULSAR", "ApachePulsarSystem"]

# PulsarStandaloneStarter, after deleting what a killed standalone left ephemeral (see above).
_STARTER_MAIN = "hotstandby.refcluster.EphemeralNodesDroppingStandalone"
_HEAP = "512m"
_NAMESPACE = "public/default"
_CONFIGURE_TIMEOUT_S = 60.0

# Pulsar's own launcher opens these packages to the broker and the bookie on Java 17.
_OPENS = ("java.base/java.nio", "java.base/jdk.internal.misc", "java.base/sun.net", "java.management/sun.management",
          "jdk.management/com.sun.management.internal", "java.base/java.lang", "java.base/java.io",
          "java.base/java.util.zip")  # fmt: skip

_SETTINGS = {
    # Loopback only: the broker's ports and its advertised address.
    "bindAddress": HOST,
    "advertisedAddress": HOST,
    # Empty: the starter keeps metadata in RocksDB under --metadata-dir (it would read a
    # non-empty URL as ZooKeeper's), the configuration store in the same one.
    "metadataStoreUrl": "",
    "configurationMetadataStoreUrl": "",
    # The embedded bookie: the given port (only with ephemeral ports allowed, else a random
    # one each start, which a restart on the same data refuses), on loopback, no HTTP server.
    "allowEphemeralPorts": "true",
    "listeningInterface": "lo",
    "allowLoopback": "true",
    "httpServerEnabled": "false",
    "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
    "dbStorage_writeCacheMaxSizeMb": "16",
    "dbStorage_readAheadCacheMaxSizeMb": "16",
    "dbStorage_rocksDB_blockCacheSize": "8388608",
    "dbStorage_rocksDB_writeBufferSizeMB": "4",
    "dbStorage_rocksDB_sstSizeInMB": "4",
    "journalMaxGroupWaitMSec": "1",
    "journalSyncData": "false",
    "diskUsageThreshold": "0.99",
    "diskUsageWarnThreshold": "0.99",
    "nettyMaxFrameSizeBytes": "5253120",
    # One bookie.
    "managedLedgerDefaultEnsembleSize": "1",
    "managedLedgerDefaultWriteQuorum": "1",
    "managedLedgerDefaultAckQuorum": "1",
    "managedLedgerCacheSizeMB": "32",
    "bookkeeperUseV2WireProtocol": "true",
    "bookkeeperClientRackawarePolicyEnabled": "false",
    # What the standalone launcher sets, and nothing the reference cluster does not use.
    "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
    "loadBalancerEnabled": "false",
    "functionsWorkerEnabled": "false",
    "transactionCoordinatorEnabled": "false",
    "webSocketServiceEnabled": "false",
    "allowAutoTopicCreation": "true",
    "allowAutoSubscriptionCreation": "true",
    "brokerDeleteInactiveTopicsEnabled": "false",
    "defaultNumberOfNamespaceBundles": "4",
    # Geo-replication and replicated subscriptions.
    "enableReplicatedSubscriptions": "true",
    "replicatedSubscriptionsSnapshotFrequencyMillis": "1000",
    "createTopicToRemoteClusterForReplication": "true",
    # The broker's clients (replication among them) open a DNS resolver socket: on loopback.
    "brokerClient_dnsLookupBindAddress": HOST,
    # Two cores for six JVMs.
    "numIOThreads": "2",
    "numHttpServerThreads": "4",
    "numOrderedExecutorThreads": "2",
    "numExecutorThreadPoolSize": "2",
    "numCacheExecutorThreadPoolSize": "2",
    "managedLedgerNumSchedulerThreads": "2",
    "numWorkerThreadsForNonPersistentTopic": "2",
    "bookkeeperClientNumWorkerThreads": "2",
    "bookkeeperClientNumIoThreads": "2",
}


def jars(options: BrokerOptions) -> JarSet:
    """Apache Pulsar's jars, of the version ``options`` ask for (else the shipped pom's)."""
    return JarSet("pulsar", options.versions.get("pulsar", ""))


def starter(options: BrokerOptions) -> JavaClasses:
    """The standalone's starter, compiled against those jars."""
    return JavaClasses(jars(options), "EphemeralNodesDroppingStandalone.java")


class ApachePulsarSystem:
    kind = "pulsar"
    brokers = ("pulsar-a", "pulsar-b")
    route = "payments"
    replicator_processes = False
    relayable = False

    def port_names(self, component: str) -> tuple[str, ...]:
        name = component.replace("-", "_")
        return (name, f"{name}_http", f"{name}_bookie")

    def url(self, port: int) -> str:
        return f"pulsar://{HOST}:{port}"

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        return ClusterSpec(name=component, kind=self.kind, url=self.url(port))

    def link(self, source: str, target: str) -> Link:
        return Link(source=source, target=target, policy="identity", replicator="pulsar-geo-replication")

    def prepare(self, directory: Path, progress: Callable[[str], None] | None, options: BrokerOptions) -> None:
        jars(options).resolve(progress=progress)
        starter(options).resolve(progress=progress)

    def broker_env(self) -> dict[str, str]:
        return {}

    def check_serving(self, component: str, ports: Ports) -> None:
        """The binary port answers before the web service has started, and clients' topic
        lookups go through it (seconds later on a busy machine): serving once its admin API
        answers."""
        url = f"http://{HOST}:{ports.of(self.port_names(component)[1])}/admin/v2/clusters"
        with urllib.request.urlopen(url, timeout=2) as response:  # HTTPError and URLError are OSErrors
            response.read()

    def broker_argv(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> list[str]:
        client, http, bookie = (ports.of(name) for name in self.port_names(component))
        settings = {**_SETTINGS, "clusterName": component, "brokerServicePort": str(client),
                    "webServicePort": str(http), "bookiePort": str(bookie)}  # fmt: skip
        if options.pulsar_partitions:
            settings.update(
                allowAutoTopicCreationType="partitioned", defaultNumPartitions=str(options.pulsar_partitions)
            )
        else:
            settings["allowAutoTopicCreationType"] = "non-partitioned"
        config = directory / "config" / f"{component}.conf"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        data = directory / f"{component}-data"
        flags = (*(f"--add-opens={module}=ALL-UNNAMED" for module in _OPENS), "-XX:MaxDirectMemorySize=256m",
                 "-Dio.netty.leakDetectionLevel=disabled", "-Dpulsar.allocator.exit_on_oom=true")  # fmt: skip
        return java_argv(
            jars(options), _STARTER_MAIN, "--config", str(config),
            "--metadata-dir", str(data / "metadata"), "--bookkeeper-dir", str(data / "bookkeeper"),
            "--bookkeeper-port", str(bookie), "--no-functions-worker", "--no-stream-storage",
            heap=_HEAP, flags=flags, classes=starter(options),
        )  # fmt: skip

    def configure(self, ports: Ports, directory: Path) -> None:
        """Geo-replication of ``public/default`` both ways, set through each cluster's admin API."""
        for local in self.brokers:
            # The standalone creates its cluster, tenant and namespace a moment after it answers.
            _admin(ports.of(f"{local}_http"), "GET", f"/admin/v2/namespaces/{_NAMESPACE}/replication", None)
        for local, remote in (self.brokers, self.brokers[::-1]):
            admin = ports.of(f"{local}_http")
            definition = {"serviceUrl": f"http://{HOST}:{ports.of(f'{remote}_http')}",
                          "brokerServiceUrl": self.url(ports.of(remote))}  # fmt: skip
            if _admin(admin, "PUT", f"/admin/v2/clusters/{remote}", definition) == 409:
                _admin(admin, "POST", f"/admin/v2/clusters/{remote}", definition)
            _admin(admin, "POST", "/admin/v2/tenants/public", {"adminRoles": [], "allowedClusters": list(self.brokers)})
            _admin(admin, "POST", f"/admin/v2/namespaces/{_NAMESPACE}/replication", list(self.brokers))

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
        raise RefClusterError("Pulsar geo-replication runs inside the brokers: no replicator process")


def _admin(port: int, method: str, path: str, body: object) -> int:
    """One admin REST call, retried while the broker is still starting (no answer, 404, 5xx);
    its HTTP status. 409 (Conflict) is an answer; another client error raises."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{HOST}:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    answer: list[int] = []
    failure: list[str] = []

    def call() -> bool:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer.append(response.status)
        except urllib.error.HTTPError as exc:
            failure[:] = [f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}"]
            if exc.code == 404 or exc.code >= 500:
                return False
            answer.append(exc.code)
        except OSError as exc:
            failure[:] = [str(exc)]
            return False
        return True

    if not wait_until(call, _CONFIGURE_TIMEOUT_S, first=0.2, most=1.0) or (answer[0] >= 400 and answer[0] != 409):
        raise RefClusterError(f"the Pulsar admin API on port {port} refused {method} {path}: {failure}")
    return answer[0]


APACHE_PULSAR = ApachePulsarSystem()
