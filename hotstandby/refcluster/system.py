"""What the reference cluster needs of each messaging system it bundles.

A :class:`RefSystem` says how its two brokers run, how they are defined in the config center,
and how its replicator flows run; :mod:`hotstandby.refcluster.cluster` drives every system the
same way. The systems are registered by kind in :mod:`hotstandby.refcluster.systems`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.refcluster.binaries import Binaries

__all__ = ["HOST", "BrokerOptions", "RefSystem"]

HOST = "127.0.0.1"


@dataclass(frozen=True, kw_only=True)
class BrokerOptions:
    """What a reference cluster asks of its brokers beyond the defaults."""

    pulsar_partitions: int = 0  # partitions pulsar-lite gives every topic it creates (0: none)


class RefSystem(Protocol):
    kind: str
    brokers: tuple[str, str]  # component names, which are also the clusters' names
    route: str  # the route registered between the two, first broker active

    def url(self, port: int) -> str:
        """The URL of the broker listening on ``port`` (on :data:`HOST`)."""
        ...

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        """The definition registered for broker ``component`` (with the client settings it needs)."""
        ...

    def link(self, source: str, target: str) -> Link:
        """How the reference replicator copies from ``source`` to ``target``."""
        ...

    def broker_argv(
        self, component: str, port: int, directory: Path, bins: Binaries, options: BrokerOptions
    ) -> list[str]:
        """The command line of broker ``component``; ``directory`` holds its files."""
        ...

    def flow_argv(
        self, source: ClusterSpec, target: ClusterSpec, link: Link, *, etcd: str, namespace: str, directory: Path
    ) -> list[str]:
        """Write the replicator flow's configuration into ``directory``; its command line."""
        ...
