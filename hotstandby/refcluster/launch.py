"""How the reference cluster starts each of its processes: the command line, the environment,
the replicators' plans, and the check that a process answers (what ``up`` and ``restart`` of
:class:`~hotstandby.refcluster.cluster.RefCluster` run for each component)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from hotstandby.errors import ConfigCenterError
from hotstandby.failover.probe import ProtocolError, probe_cluster
from hotstandby.refcluster.etcd_access import ROOT, EtcdAccess
from hotstandby.refcluster.etcd_members import member_argv, member_ready
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.system import BrokerOptions, FlowPlan

if TYPE_CHECKING:
    from hotstandby.refcluster.cluster import RefCluster

__all__ = ["Launcher"]


class Launcher:
    """Starts the processes of ``cluster`` (its public view: flavour, directory, ports, etcd)."""

    def __init__(self, cluster: RefCluster) -> None:
        self._c = cluster
        self.plans: dict[str, FlowPlan] = {}  # the replicators' plans for their current start

    def flow(self, component: str, ports: Ports) -> FlowPlan:
        """The replicator's plan for this start, made once: making one writes its configuration
        and clears its status file, which must not happen again once it runs."""
        plan = self.plans.get(component)
        if plan is None:
            source, target = self._c.flavour.flow_of(component)
            plan = self.plans[component] = self._c.flavour.system_of(source).flow(
                self._c.cluster_spec(source, ports), self._c.cluster_spec(target, ports), self._c.link(source, target),
                etcd=self._c.etcd_access(ports).url, namespace=self._c.namespace, directory=self._c.dir / "replicators",
                options=self.options(),
            )  # fmt: skip
        return plan

    def argv(self, component: str, ports: Ports) -> list[str]:
        if component in self._c.replicators:
            return self.flow(component, ports).argv
        if component in self._c.etcd_names:
            return member_argv(component, self._c.etcd_members, ports, self._c.dir, self._c.etcd_access(ports))
        return self._c.flavour.system_of(component).broker_argv(component, ports, self._c.dir, self.options())

    def options(self) -> BrokerOptions:
        """The options to start a process with: a restart keeps the cluster's settings."""
        return replace(self._c.options, tuning=self._c.tuning, versions=self._c.versions)

    def readiness(
        self, component: str, ports: Ports, started_at: float
    ) -> tuple[Callable[[], object], tuple[type[BaseException], ...]]:
        if component in self._c.replicators:
            plan = self.flow(component, ports)
            return (lambda: plan.ready(started_at)), plan.retry_on
        if component in self._c.etcd_names:
            # Before auth is enabled (a fresh start) no credentials; afterwards (a restart) root's.
            user = ROOT if (self._c.state() or {}).get("auth") else None
            member = EtcdAccess(self._c.dir, ports.of(component), secure=self._c.secure)
            return member_ready(member, self._c.namespace, user), (ConfigCenterError,)
        spec = self._c.cluster_spec(component, ports)
        system = self._c.flavour.system_of(component)

        def check_broker() -> None:
            result = probe_cluster(spec, timeout=1.0)
            if not result.ok:
                raise ProtocolError(result.detail)
            system.check_serving(component, ports)

        return check_broker, (OSError, ProtocolError)

    def env(self, component: str, ports: Ports) -> dict[str, str]:
        # Drop variables the binaries would read as configuration (the replicators' etcd
        # credentials are the cluster's own); no colour codes in the logs.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ETCD_", "LISTENER_URL", "CLUSTER_ID", "STORAGE_ENGINE", "HOTSTANDBY_ETCD"))
        }
        env["NO_COLOR"] = "1"
        if component in self._c.replicators:
            env.update(self._c.etcd_access(ports).environ("replicator"))
            env.update(self.flow(component, ports).env)
        elif component not in self._c.etcd_names:
            env.update(self._c.flavour.system_of(component).broker_env())
        return env
