"""The bundled reference cluster: etcd, and two brokers of each registered system with their
replicators (Kafka-protocol and Pulsar-protocol brokers: ``refcluster/systems.py``).

Every process listens on 127.0.0.1 only. ``up`` starts from an empty state (the Kafka
brokers keep data in memory anyway), waits until each process answers a real protocol
request, registers clusters, links and the routes ``orders`` and ``payments`` in etcd, and
writes ports, PIDs and log paths to ``<dir>/state.json``. ``down`` stops by PID what that file
lists.

Default ports (override any of them): etcd 2379 (peer 2380), kafka-a 9092, kafka-b 9093,
pulsar-a 6650, pulsar-b 6651.

``secure=True`` (``refcluster up --secure``) starts etcd with TLS and authentication: a
generated CA, a root user and a user per role (``refcluster/etcd_access.py``). The replicators
then connect as ``replicator``; :meth:`RefCluster.settings` and :meth:`RefCluster.client_config`
name the user a client connects as.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Link, utc_now_iso
from hotstandby.errors import ConfigCenterError, RefClusterError, ValidationError
from hotstandby.failover.probe import ProtocolError, probe_cluster
from hotstandby.logs import get_logger
from hotstandby.refcluster.binaries import find_binaries
from hotstandby.refcluster.etcd_access import ROOT, EtcdAccess
from hotstandby.refcluster.flow_status import read_status
from hotstandby.refcluster.processes import is_running, spawn, stop_pid, wait_ready
from hotstandby.refcluster.replicators import NotReady, check_ready, replicator_name, status_path
from hotstandby.refcluster.system import HOST, BrokerOptions
from hotstandby.refcluster.systems import SYSTEMS, system_of
from hotstandby.settings import Settings

__all__ = ["BROKERS", "COMPONENTS", "REPLICATORS", "Ports", "RefCluster", "default_dir"]

log = get_logger("hotstandby.refcluster")

BROKERS = ("etcd", *(broker for system in SYSTEMS.values() for broker in system.brokers))
# Both directions between the two brokers of each system.
FLOWS = tuple(pair for s in SYSTEMS.values() for pair in (s.brokers, (s.brokers[1], s.brokers[0])))
REPLICATORS = tuple(replicator_name(s, t) for s, t in FLOWS)
COMPONENTS = BROKERS + REPLICATORS


def default_dir() -> Path:
    """``$HOTSTANDBY_REFCLUSTER_DIR`` or ``~/.hotstandby/refcluster``."""
    return Path(os.environ.get("HOTSTANDBY_REFCLUSTER_DIR") or Path.home() / ".hotstandby" / "refcluster")


@dataclass(frozen=True, kw_only=True)
class Ports:
    """TCP ports of the reference cluster (all on 127.0.0.1)."""

    etcd: int = 2379
    etcd_peer: int = 2380
    kafka_a: int = 9092
    kafka_b: int = 9093
    pulsar_a: int = 6650
    pulsar_b: int = 6651

    @classmethod
    def free(cls) -> Ports:
        """Ports the system says are free right now (for tests)."""
        with ExitStack() as stack:
            socks = []
            for _ in fields(cls):
                s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                s.bind((HOST, 0))
                socks.append(s)
            return cls(**{f.name: s.getsockname()[1] for f, s in zip(fields(cls), socks, strict=True)})

    def with_overrides(self, overrides: dict[str, int]) -> Ports:
        """Override by component name (``kafka-a``) or field name (``kafka_a``, ``etcd_peer``)."""
        names = {f.name for f in fields(self)}
        changes = {}
        for name, port in overrides.items():
            field_name = name.replace("-", "_")
            if field_name not in names:
                raise ValidationError("port", f"unknown port name {name!r}; known: {', '.join(sorted(names))}")
            if not 0 < int(port) < 65536:
                raise ValidationError("port", f"{name}: {port} is not a TCP port")
            changes[field_name] = int(port)
        return replace(self, **changes)

    def of(self, component: str) -> int:
        return int(getattr(self, component.replace("-", "_")))


def _check_ports_free(ports: Ports) -> None:
    """Refuse to start when a port is taken: a broker already there would pass our readiness probe."""
    busy = []
    for f in fields(ports):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((HOST, getattr(ports, f.name)))
            except OSError:
                busy.append(f"{f.name.replace('_', '-')}={getattr(ports, f.name)}")
    if busy:
        raise RefClusterError(f"ports in use on {HOST}: {', '.join(busy)}; choose others with --port NAME=PORT")


class RefCluster:
    """The reference cluster rooted at ``directory``; also a context manager (up/down)."""

    def __init__(
        self,
        directory: Path | str | None = None,
        ports: Ports | None = None,
        *,
        namespace: str = "/hotstandby",
        pulsar_partitions: int = 0,
        secure: bool = False,
    ) -> None:
        """``pulsar_partitions``: the partitions pulsar-lite gives every topic it creates (0:
        topics are not partitioned; the broker cannot do both, see docs/refcluster.md).
        ``secure``: etcd with TLS and authentication (a running cluster keeps what it was
        started with)."""
        self.dir = Path(directory) if directory else default_dir()
        self.requested_ports = ports or Ports()
        self.namespace = namespace
        self.pulsar_partitions = pulsar_partitions
        self.requested_secure = secure
        self._children: dict[str, Any] = {}

    # -- state ---------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.dir / "state.json"

    def state(self) -> dict[str, Any] | None:
        """The state file's content, or None when the cluster was never started here."""
        try:
            return dict(json.loads(self.state_path.read_text()))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise RefClusterError(f"{self.state_path} is corrupt: {exc}") from None

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_path)

    @property
    def ports(self) -> Ports:
        state = self.state()
        return Ports(**state["ports"]) if state else self.requested_ports

    @property
    def secure(self) -> bool:
        """Whether etcd speaks TLS and requires authentication."""
        state = self.state()
        return bool(state.get("secure")) if state else self.requested_secure

    def etcd_access(self, ports: Ports | None = None) -> EtcdAccess:
        return EtcdAccess(self.dir, (ports or self.ports).etcd, secure=self.secure)

    def settings(self, user: str = ROOT) -> Settings:
        """Settings that point a client at this cluster's etcd (as ``user`` when it is secure)."""
        return self.etcd_access().settings(self.namespace, user)

    def client_config(self, user: str = "app") -> dict[str, str]:
        """The ``hotstandby.etcd*`` keys of a client of this cluster's etcd (as ``user`` when
        it is secure): endpoint, CA and password file."""
        return self.etcd_access().client_config(user)

    def url(self, component: str) -> str:
        return system_of(component).url(self.ports.of(component))

    def running(self) -> dict[str, bool]:
        state = self.state() or {"components": {}}
        return {
            name: bool(info) and is_running(info["pid"], info["argv"])
            for name, info in ((n, state["components"].get(n)) for n in COMPONENTS)
        }

    def replication(self) -> dict[str, dict[str, Any] | None]:
        """Each replicator's last reported status (None before its first report)."""
        return {name: read_status(status_path(self._argv_config(name))) for name in REPLICATORS if self._has(name)}

    def _has(self, component: str) -> bool:
        return component in (self.state() or {}).get("components", {})

    def is_up(self) -> bool:
        return self.state() is not None and all(self.running().values())

    # -- lifecycle -------------------------------------------------------------------------

    def link(self, source: str, target: str) -> Link:
        """The link registered between two of the brokers (what the replicator follows)."""
        return system_of(source).link(source, target)

    def _argv(self, component: str, ports: Ports) -> list[str]:
        if component in REPLICATORS:
            source, target = next((s, t) for s, t in FLOWS if replicator_name(s, t) == component)
            return system_of(source).flow_argv(
                self.cluster_spec(source, ports), self.cluster_spec(target, ports), self.link(source, target),
                etcd=self.etcd_access(ports).url, namespace=self.namespace, directory=self.dir / "replicators",
            )  # fmt: skip
        bins = find_binaries()
        if component == "etcd":
            peer = f"http://{HOST}:{ports.etcd_peer}"
            access = self.etcd_access(ports)
            client = access.url if access.secure else f"http://{access.url}"
            return [
                bins.etcd, "--name", "hs-ref", "--data-dir", str(self.dir / "etcd-data"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"hs-ref={peer}", "--initial-cluster-token", "hs-ref",
                "--log-level", "warn", "--unsafe-no-fsync", *access.server_args(),
            ]  # fmt: skip
        options = BrokerOptions(pulsar_partitions=self.pulsar_partitions)
        return system_of(component).broker_argv(component, ports.of(component), self.dir, bins, options)

    def _readiness(self, component: str, ports: Ports) -> tuple[Callable[[], object], tuple[type[BaseException], ...]]:
        if component in REPLICATORS:
            config = self._argv_config(component)
            return (lambda: check_ready(config)), (NotReady,)
        if component == "etcd":
            # Before auth is enabled (a fresh start) no credentials; afterwards (a restart) root's.
            user = ROOT if (self.state() or {}).get("auth") else None
            settings = self.etcd_access(ports).settings(self.namespace, user, timeout=1.0)

            def check_etcd() -> None:
                with ConfigCenter.open(settings) as center:
                    center.clusters()  # one read: etcd answers

            return check_etcd, (ConfigCenterError,)
        spec = self.cluster_spec(component, ports)

        def check_broker() -> None:
            result = probe_cluster(spec, timeout=1.0)
            if not result.ok:
                raise ProtocolError(result.detail)

        return check_broker, (OSError, ProtocolError)

    def _argv_config(self, component: str) -> str:
        info = (self.state() or {}).get("components", {}).get(component)
        if not info:
            raise RefClusterError(f"{component} has no recorded command line")
        return str(info["argv"][info["argv"].index("--config") + 1])

    def _start(self, component: str, ports: Ports, argv: list[str]) -> dict[str, Any]:
        log_path = self.dir / "logs" / f"{component}.log"
        if component in REPLICATORS:
            # A status file left by a killed process must not pass for readiness.
            status_path(argv[argv.index("--config") + 1]).unlink(missing_ok=True)
        # Drop variables the binaries would read as configuration (the replicators' etcd
        # credentials are the cluster's own); no colour codes in the logs.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ETCD_", "LISTENER_URL", "CLUSTER_ID", "STORAGE_ENGINE", "HOTSTANDBY_ETCD"))
        }
        env["NO_COLOR"] = "1"
        if component in REPLICATORS:
            env.update(self.etcd_access(ports).environ("replicator"))
        proc = spawn(argv, log_path=log_path, cwd=self.dir, env=env)
        self._children[component] = proc
        port = None if component in REPLICATORS else ports.of(component)
        return {"pid": proc.pid, "port": port, "log": str(log_path), "argv": argv}

    def _wait(self, component: str, ports: Ports, info: dict[str, Any], timeout: float) -> float:
        check, retry_on = self._readiness(component, ports)
        return wait_ready(
            component, self._children[component], check, timeout=timeout, log_path=Path(info["log"]), retry_on=retry_on
        )

    def up(self, *, timeout: float = 60.0, progress: Callable[[str, float], None] | None = None) -> bool:
        """Start everything; False (and nothing done) if it is already up."""
        if self.is_up():
            return False
        if self.state() is not None:
            log.warning("refcluster.partial", running=self.running())
            self.down()
        ports = self.requested_ports
        _check_ports_free(ports)
        for name in BROKERS:  # data left by an earlier run (brokers that keep it on disk)
            shutil.rmtree(self.dir / f"{name}-data", ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        state: dict[str, Any] = {"version": 1, "started_at": utc_now_iso(), "namespace": self.namespace,
                                 "ports": asdict(ports), "secure": self.requested_secure, "components": {}}  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            # Brokers first; the replicators need them and the registered links.
            for phase in (BROKERS, REPLICATORS):
                for component in phase:
                    state["components"][component] = self._start(component, ports, self._argv(component, ports))
                self._write_state(state)  # before waiting, so `down` can clean up a failed start
                for component in phase:
                    info = state["components"][component]
                    waited = self._wait(component, ports, info, max(deadline - time.monotonic(), 1.0))
                    log.info("refcluster.ready", component=component, port=info["port"], waited_s=round(waited, 3))
                    if progress:
                        progress(component, waited)
                if phase is BROKERS:
                    if self.secure:
                        self.etcd_access().enable_auth()
                        state["auth"] = True
                        self._write_state(state)
                    self.register()
        except BaseException:
            self.down()
            raise
        return True

    def down(self) -> list[str]:
        """Stop every process the state file lists, by PID. Safe to repeat."""
        state = self.state()
        stopped = []
        if state is not None:
            for component, info in reversed(list(state["components"].items())):
                if stop_pid(info["pid"], info["argv"]):
                    stopped.append(component)
                    log.info("refcluster.stopped", component=component, pid=info["pid"])
                proc = self._children.pop(component, None)
                if proc is not None:
                    proc.wait(timeout=5)
            self.state_path.unlink(missing_ok=True)
        return stopped

    def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one component (to simulate a crash); it stays down until restart."""
        info = self._component(component)
        stop_pid(info["pid"], info["argv"], sig=sig)

    def restart(self, component: str, *, timeout: float = 30.0) -> float:
        """Start a stopped component again with the same arguments and data; returns seconds to ready."""
        state = self.state() or {}
        info = self._component(component)
        if is_running(info["pid"], info["argv"]):
            raise RefClusterError(f"{component} is still running (pid {info['pid']})")
        ports = Ports(**state["ports"])
        state["components"][component] = new = self._start(component, ports, info["argv"])
        self._write_state(state)
        return self._wait(component, ports, new, timeout)

    def _component(self, component: str) -> dict[str, Any]:
        state = self.state()
        if state is None or component not in state["components"]:
            raise RefClusterError(f"{component} is not part of a running reference cluster in {self.dir}")
        return dict(state["components"][component])

    # -- registration --------------------------------------------------------------------

    def cluster_spec(self, component: str, ports: Ports | None = None) -> ClusterSpec:
        """The definition registered for broker ``component`` (with the broker's client overrides)."""
        return system_of(component).cluster_spec(component, (ports or self.ports).of(component))

    def register(self, namespace: str | None = None) -> None:
        """Store the clusters, the links between each pair and each system's route in
        ``namespace``; on a secure cluster, the namespace's roles for its users too."""
        settings = replace(self.settings(), namespace=namespace or self.namespace)
        self.etcd_access().grant(settings.namespace)
        with ConfigCenter.open(settings) as center:
            for component in BROKERS[1:]:
                center.put_cluster(self.cluster_spec(component), replace=True)
            for source, target in FLOWS:
                center.put_link(self.link(source, target))
            for system in SYSTEMS.values():
                center.create_route(system.route, list(system.brokers), system.brokers[0], reason="refcluster up")

    # -- context manager -----------------------------------------------------------------

    def __enter__(self) -> RefCluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()
