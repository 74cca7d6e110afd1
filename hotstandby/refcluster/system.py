"""What the reference cluster needs of each messaging system it bundles.

A :class:`RefSystem` says how its two brokers run, how they are defined in the config center,
and how replication between them runs: as replicator processes of their own (one per
direction: the lite flows, MirrorMaker 2) or inside the brokers (Pulsar geo-replication, set up
once the brokers answer). :mod:`hotstandby.refcluster.cluster` drives every system the same
way; the systems of each flavour of the cluster are listed in
:mod:`hotstandby.refcluster.flavours`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.errors import RefClusterError

if TYPE_CHECKING:
    from hotstandby.refcluster.ports import Ports

__all__ = ["HOST", "TUNINGS", "VERSIONED", "BrokerOptions", "FlowPlan", "RefSystem", "Tuning"]

HOST = "127.0.0.1"

#: ``test``: intervals shortened so tests see replication's effects in seconds (the modules of
#: the real systems list them); ``production``: the systems' own defaults where one node allows.
Tuning = Literal["test", "production"]
TUNINGS: tuple[Tuning, ...] = ("test", "production")
#: The systems whose version the apache reference cluster takes (``refcluster up --kafka-version``).
VERSIONED = ("kafka", "pulsar")
_VERSION = re.compile(r"\d+\.\d+\.\d+")


@dataclass(frozen=True, kw_only=True)
class BrokerOptions:
    """What a reference cluster asks of its brokers beyond the defaults."""

    pulsar_partitions: int = 0  # partitions every topic the Pulsar brokers create gets (0: none)
    # Brokers that listen on another port than their registered one, which they still
    # advertise: a test's fault relay listens there and forwards (the lite Kafka brokers only).
    listen: Mapping[str, int] = field(default_factory=dict)
    tuning: Tuning = "test"  # the real systems' settings (the look-alikes have one kind)
    # The real systems' versions by kind ("kafka", "pulsar"); a kind left out: the shipped pom's.
    versions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tuning not in TUNINGS:
            raise RefClusterError(f"unknown settings {self.tuning!r}: one of {', '.join(TUNINGS)}")
        for kind, version in self.versions.items():
            if kind not in VERSIONED or not _VERSION.fullmatch(version):
                raise RefClusterError(f"not a version to run: {kind} {version!r} (kafka or pulsar, as 3.9.1)")


@dataclass(frozen=True, kw_only=True)
class FlowPlan:
    """One replicator process: its command line, extra environment, and how to tell it runs
    (``ready(started_at)``, given the wall-clock time it was started, raises one of
    ``retry_on`` until it does)."""

    argv: list[str]
    ready: Callable[[float], object]
    retry_on: tuple[type[BaseException], ...]
    env: dict[str, str] = field(default_factory=dict)


class RefSystem(Protocol):
    kind: str
    brokers: tuple[str, str]  # component names, which are also the clusters' names
    route: str  # the route registered between the two, first broker active
    replicator_processes: bool  # False: the brokers replicate themselves (set up by configure)
    relayable: bool  # its brokers can listen on another port than they advertise (BrokerOptions.listen)

    def port_names(self, component: str) -> tuple[str, ...]:
        """The :class:`Ports` fields broker ``component`` listens on (its client port first)."""
        ...

    def url(self, port: int) -> str:
        """The URL of the broker listening on ``port`` (on :data:`HOST`)."""
        ...

    def cluster_spec(self, component: str, port: int) -> ClusterSpec:
        """The definition registered for broker ``component`` (with the client settings it needs)."""
        ...

    def link(self, source: str, target: str) -> Link:
        """How records are copied from ``source`` to ``target``."""
        ...

    def prepare(self, directory: Path, progress: Callable[[str], None] | None, options: BrokerOptions) -> None:
        """Before a start: make sure what the brokers run is at hand (binaries, jars)."""
        ...

    def broker_argv(self, component: str, ports: Ports, directory: Path, options: BrokerOptions) -> list[str]:
        """The command line of broker ``component``, for a first start on empty data
        (``directory`` holds its files; formatting its storage is done here)."""
        ...

    def broker_env(self) -> dict[str, str]:
        """Variables the brokers' processes get."""
        ...

    def check_serving(self, component: str, ports: Ports) -> None:
        """Once broker ``component`` answers its protocol: raise OSError while it does not
        serve clients yet (a broker whose other services start later)."""
        ...

    def configure(self, ports: Ports, directory: Path) -> None:
        """Once both brokers answer: what replication inside them needs (nothing for a system
        with replicator processes)."""
        ...

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
        """The replicator process copying ``source`` to ``target`` (only for a system with
        :attr:`replicator_processes`); its configuration is written into ``directory``."""
        ...
