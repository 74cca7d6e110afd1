"""The bundled reference cluster: etcd, and two brokers of each messaging system with the
replication between them, in one of two flavours (``refcluster/flavours.py``): ``lite``
(look-alike brokers and our replicators) or ``apache`` (Apache Kafka with MirrorMaker 2,
Apache Pulsar with geo-replication).

Every process listens on 127.0.0.1 only. ``up`` starts from empty data, waits until each
process answers a real protocol request, registers clusters, links and the routes ``orders``
and ``payments`` in etcd, and writes the flavour, ports, PIDs and log paths to
``<dir>/state.json``. ``down`` stops by PID what that file lists.

Default ports (override any, ``refcluster/ports.py``): etcd 2379 (peer 2380; one member or
three, ``refcluster/etcd_members.py``), kafka-a 9092, kafka-b 9093, pulsar-a 6650, pulsar-b
6651. ``secure=True`` (``refcluster up --secure``) starts etcd with TLS and authentication
(``refcluster/etcd_access.py``); :meth:`RefCluster.settings` and
:meth:`RefCluster.client_config` name the user a client connects as.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Link, utc_now_iso
from hotstandby.errors import RefClusterError
from hotstandby.logs import get_logger
from hotstandby.refcluster.etcd_access import ROOT, EtcdAccess
from hotstandby.refcluster.etcd_members import client_ports, leader, member_names, port_names
from hotstandby.refcluster.flavours import FLAVOURS, Brokers, Flavour, flavour
from hotstandby.refcluster.flow_status import read_status
from hotstandby.refcluster.launch import Launcher
from hotstandby.refcluster.ports import Ports, check_ports_free
from hotstandby.refcluster.processes import is_running, spawn, stop_pid, stop_pids, wait_ready
from hotstandby.refcluster.replicators import status_path
from hotstandby.refcluster.system import BrokerOptions, Tuning
from hotstandby.settings import Settings

__all__ = ["BROKERS", "COMPONENTS", "REPLICATORS", "Ports", "RefCluster", "default_dir"]

log = get_logger("hotstandby.refcluster")
_UP_TIMEOUT_S = {"lite": 60.0, "apache": 240.0}  # up's default wait for the processes, by flavour

LITE = FLAVOURS["lite"]
# The lite flavour's components (the default cluster); a cluster's own: RefCluster.components.
BROKERS = LITE.brokers
REPLICATORS = LITE.replicators
COMPONENTS = LITE.components


def default_dir() -> Path:
    """``$HOTSTANDBY_REFCLUSTER_DIR`` or ``~/.hotstandby/refcluster``."""
    return Path(os.environ.get("HOTSTANDBY_REFCLUSTER_DIR") or Path.home() / ".hotstandby" / "refcluster")


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
        brokers: Brokers | str = "lite",
        etcd_members: int = 1,
        listen: Mapping[str, int] | None = None,
        tuning: Tuning = "test",
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """``pulsar_partitions``: the partitions every topic the Pulsar brokers create gets (0:
        topics are not partitioned; pulsar-lite cannot do both, see docs/refcluster.md).
        ``secure``: etcd with TLS and authentication. ``brokers``: ``lite`` (look-alikes from
        wheels) or ``apache`` (the real systems, jars from Maven Central). ``etcd_members``: 1 or
        3 (``refcluster/etcd_members.py``). ``listen``: lite Kafka brokers that listen on another
        port while they advertise theirs (a test's relay forwards). ``tuning``: ``test`` or
        ``production`` (the real systems' own intervals, :mod:`.apache_kafka`). ``versions``: the
        real systems' versions by kind (``{"kafka": "3.9.1"}``; else the shipped ones). A running
        cluster keeps what it was started with."""
        self.dir = Path(directory) if directory else default_dir()
        self.requested_ports = ports or Ports()
        self.namespace = namespace
        self.requested_secure = secure
        self.requested_flavour = flavour(brokers)
        self.options = BrokerOptions(pulsar_partitions=pulsar_partitions, listen=dict(listen or {}), tuning=tuning,
                                     versions=dict(versions or {}))  # fmt: skip
        for component in self.options.listen:
            if not self.requested_flavour.system_of(component).relayable:
                raise RefClusterError(f"{component} cannot listen on another port than it advertises")
        member_names(etcd_members)  # refuses another count before anything starts
        self.requested_etcd_members = etcd_members
        self._children: dict[str, Any] = {}
        self._launch = Launcher(self)

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

    @property
    def flavour(self) -> Flavour:
        """What the cluster is made of: the running one's, else the requested one."""
        state = self.state()
        return FLAVOURS[state.get("brokers", "lite")] if state else self.requested_flavour

    @property
    def tuning(self) -> Tuning:
        """``test`` or ``production`` settings: the running cluster's, else the requested ones."""
        state = self.state()
        return cast(Tuning, state.get("tuning", "test")) if state else self.options.tuning

    @property
    def versions(self) -> dict[str, str]:
        """The real systems' versions asked for (empty: the shipped ones): the running cluster's,
        else the requested ones."""
        state = self.state()
        return dict(state.get("versions", {})) if state else dict(self.options.versions)

    @property
    def brokers(self) -> str:
        """``lite`` or ``apache``."""
        return self.flavour.name

    @property
    def etcd_members(self) -> int:
        """How many members etcd runs: the running cluster's, else the requested count."""
        state = self.state()
        return int(state.get("etcd_members", 1)) if state else self.requested_etcd_members

    etcd_names = property(lambda self: member_names(self.etcd_members), doc="etcd's members (``etcd`` first).")

    @property
    def components(self) -> tuple[str, ...]:
        """etcd's members, the brokers and the replicator processes of this cluster."""
        return (*self.etcd_names, *self.flavour.components[1:])

    @property
    def replicators(self) -> tuple[str, ...]:
        return self.flavour.replicators

    def etcd_access(self, ports: Ports | None = None) -> EtcdAccess:
        return EtcdAccess(self.dir, client_ports(ports or self.ports, self.etcd_members), secure=self.secure)

    def etcd_leader(self) -> str:
        """The etcd member that leads now (``etcd`` with a single member)."""
        return leader(self.etcd_access(), self.ports, self.etcd_members)

    def settings(self, user: str = ROOT) -> Settings:
        """Settings that point a client at this cluster's etcd (as ``user`` when it is secure)."""
        return self.etcd_access().settings(self.namespace, user)

    def client_config(self, user: str = "app") -> dict[str, str]:
        """The ``hotstandby.etcd*`` keys of a client of this cluster's etcd (as ``user`` when
        it is secure): endpoint, CA and password file."""
        return self.etcd_access().client_config(user)

    def url(self, component: str) -> str:
        return self.flavour.system_of(component).url(self.ports.of(component))

    def running(self) -> dict[str, bool]:
        state = self.state() or {"components": {}}
        return {
            name: bool(info) and is_running(info["pid"], info["argv"])
            for name, info in ((n, state["components"].get(n)) for n in self.components)
        }

    def replication(self) -> dict[str, dict[str, Any] | None]:
        """Each lite replicator's last reported status (None before its first report)."""
        return {
            name: read_status(status_path(self._argv_config(name)))
            for name in self.replicators
            if self._has(name) and "--config" in self._component(name)["argv"]
        }

    def _has(self, component: str) -> bool:
        return component in (self.state() or {}).get("components", {})

    def is_up(self) -> bool:
        return self.state() is not None and all(self.running().values())

    # -- lifecycle -------------------------------------------------------------------------

    def link(self, source: str, target: str) -> Link:
        """The link registered between two of the brokers (what the replicator follows)."""
        return self.flavour.system_of(source).link(source, target)

    def _argv_config(self, component: str) -> str:
        argv = self._component(component)["argv"]
        return str(argv[argv.index("--config") + 1])

    def _start(self, component: str, ports: Ports, argv: list[str]) -> dict[str, Any]:
        log_path = self.dir / "logs" / f"{component}.log"
        started_at = time.time()
        proc = spawn(argv, log_path=log_path, cwd=self.dir, env=self._launch.env(component, ports))
        self._children[component] = proc
        port = None if component in self.replicators else ports.of(component)
        return {"pid": proc.pid, "port": port, "log": str(log_path), "argv": argv, "started_at": started_at}

    def _wait(self, component: str, ports: Ports, info: dict[str, Any], timeout: float) -> float:
        check, retry_on = self._launch.readiness(component, ports, info["started_at"])
        return wait_ready(
            component, self._children[component], check, timeout=timeout, log_path=Path(info["log"]), retry_on=retry_on
        )

    def up(
        self,
        *,
        timeout: float | None = None,
        progress: Callable[[str, float], None] | None = None,
        notes: Callable[[str], None] | None = None,
    ) -> bool:
        """Start everything; False (and nothing done) if it is already up. ``timeout``: for the
        processes to answer (60 s lite, 240 s apache: six JVMs start in 36 to 56 s on an idle
        2-core machine; a first ``apache`` start resolves jars with Maven before, which ``notes``
        hears of). ``progress(component, seconds)``: each component as it answers."""
        if self.is_up():
            return False
        timeout = _UP_TIMEOUT_S[self.requested_flavour.name] if timeout is None else timeout
        if self.state() is not None:
            log.warning("refcluster.partial", running=self.running())
            self.down()
        ports, flavour, members = self.requested_ports, self.requested_flavour, self.requested_etcd_members
        self._launch.plans.clear()
        self.dir.mkdir(parents=True, exist_ok=True)
        for system in flavour.systems:
            system.prepare(self.dir, notes, self.options)
        relayed = {name.replace("-", "_") for name in self.options.listen}  # their ports are the relays'
        check_ports_free(ports, [*port_names(members), *set(flavour.port_names()) - relayed])
        brokers = (*member_names(members), *flavour.brokers[1:])
        for name in brokers:  # data left by an earlier run (brokers that keep it on disk)
            shutil.rmtree(self.dir / f"{name}-data", ignore_errors=True)
        state: dict[str, Any] = {"version": 1, "started_at": utc_now_iso(), "namespace": self.namespace,
                                 "brokers": flavour.name, "ports": asdict(ports), "secure": self.requested_secure, "etcd_members": members,
                                 "tuning": self.options.tuning, "versions": dict(self.options.versions),
                                 "components": {}}  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            # etcd and the brokers first; the replicators need them and the registered links.
            for phase in (brokers, flavour.replicators):
                for component in phase:
                    state["components"][component] = self._start(component, ports, self._launch.argv(component, ports))
                    self._write_state(state)  # before waiting, so `down` can clean up a failed start
                for component in phase:
                    info = state["components"][component]
                    waited = self._wait(component, ports, info, max(deadline - time.monotonic(), 1.0))
                    log.info("refcluster.ready", component=component, port=info["port"], waited_s=round(waited, 3))
                    if progress:
                        progress(component, waited)
                if phase is brokers:
                    if self.secure:
                        self.etcd_access().enable_auth()
                        state["auth"] = True
                        self._write_state(state)
                    for system in flavour.systems:
                        system.configure(ports, self.dir)
                    self.register()
        except BaseException:
            self.down()
            raise
        return True

    def down(self) -> list[str]:
        """Stop every process the state file lists, by PID: the replicators together, then the
        brokers and etcd together. Safe to repeat."""
        state = self.state()
        if state is None:
            return []
        items, stopped = list(reversed(list(state["components"].items()))), []
        first = [i for i in items if i[0] in self.replicators]
        for batch in (first, [i for i in items if i not in first]):
            ran = stop_pids([(info["pid"], info["argv"]) for _, info in batch])
            for (component, info), was_running in zip(batch, ran, strict=True):
                if was_running:
                    stopped.append(component)
                    log.info("refcluster.stopped", component=component, pid=info["pid"])
                if (proc := self._children.pop(component, None)) is not None:
                    proc.wait(timeout=5)
        self.state_path.unlink(missing_ok=True)
        return stopped

    def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one component (to simulate a crash); it stays down until restart."""
        info = self._component(component)
        stop_pid(info["pid"], info["argv"], sig=sig)

    def restart(self, component: str, *, timeout: float | None = None) -> float:
        """Start a stopped component again with the same arguments and data; returns seconds to
        ready (``timeout``: 30 s on the lite cluster, 120 s on the apache one, whose JVMs
        recover their data first)."""
        timeout = (120.0 if self.brokers == "apache" else 30.0) if timeout is None else timeout
        state = self.state() or {}
        info = self._component(component)
        if is_running(info["pid"], info["argv"]):
            raise RefClusterError(f"{component} is still running (pid {info['pid']})")
        ports = Ports(**state["ports"])
        self._launch.plans.pop(component, None)
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
        return self.flavour.system_of(component).cluster_spec(component, (ports or self.ports).of(component))

    def register(self, namespace: str | None = None) -> None:
        """Store the clusters, the links between each pair and each system's route in
        ``namespace``; on a secure cluster, the namespace's roles for its users too."""
        settings = replace(self.settings(), namespace=namespace or self.namespace)
        self.etcd_access().grant(settings.namespace)
        with ConfigCenter.open(settings) as center:
            self.flavour.register(center, self.ports)

    # -- context manager -----------------------------------------------------------------

    def __enter__(self) -> RefCluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()
