"""The messaging systems of the reference cluster, registered by kind.

A system joins with its module (a :class:`~hotstandby.refcluster.system.RefSystem`), one line
here, and its two ports in :class:`~hotstandby.refcluster.cluster.Ports`.
"""

from __future__ import annotations

from hotstandby.errors import RefClusterError
from hotstandby.refcluster.kafka import KAFKA
from hotstandby.refcluster.pulsar import PULSAR
from hotstandby.refcluster.system import RefSystem

__all__ = ["SYSTEMS", "system_of"]

SYSTEMS: dict[str, RefSystem] = {system.kind: system for system in (KAFKA, PULSAR)}


def system_of(component: str) -> RefSystem:
    """The system whose broker ``component`` is."""
    for system in SYSTEMS.values():
        if component in system.brokers:
            return system
    raise RefClusterError(f"{component} is not a broker of the reference cluster")
