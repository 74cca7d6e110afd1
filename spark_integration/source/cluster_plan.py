"""What the streaming planner asks of one cluster, whatever the messaging system.

:class:`~hotstandby.spark_integration.source.stream_planner.StreamPlanner` runs the route, the switch
protocol and the ledger the same way for every system; a :class:`ClusterPlan` (Kafka:
:mod:`hotstandby.spark_integration.kafka.plan`, Pulsar:
:mod:`hotstandby.spark_integration.pulsar.plan`) knows how positions look on one cluster of
that system: where a query starts, how far the next batch goes, which tasks read it, where to
start after a switch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.failover.ledger.staged import SwitchHints
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.spark_integration.source.offsets import SourceOffset

__all__ = ["Arrival", "ClusterPlan", "PlanContext", "ReadsPartition"]


@dataclass(frozen=True)
class PlanContext:
    """What a plan needs from the route: its clusters and the replication links (read anew),
        the topics registered in the config center for a cluster (Pulsar's ``topicsPattern``), and the
    route's other clusters' settings (a detour reads one of them)."""

    clusters: Callable[[], Sequence[str]]
    links: Callable[[], Mapping[tuple[str, str], Link]]
    registered: Callable[[str], Sequence[str]] = lambda cluster: ()
    spec: Callable[[str], ClusterSpec] | None = None  # another cluster of the route, by name


@dataclass(frozen=True)
class Arrival:
    """Where the next batch starts after a switch: an offset whose ``starts``/``starts_ids``
    hold the new cluster's start positions (its positions are those starts)."""

    plan: ClusterPlan
    starts: SourceOffset
    strategies: Mapping[str, int]
    came_from: str
    came_from_epoch: int

    @property
    def epoch(self) -> int:
        return self.starts.epoch


class ReadsPartition(Protocol):
    """An input partition's value: it knows how to read itself on an executor."""

    def read(self) -> Iterator[Any]: ...


class ClusterPlan(Protocol):
    """Planning on one cluster (see the module docs). Raises one of :attr:`unreachable` when
    the cluster does not answer."""

    spec: ClusterSpec
    unreachable: tuple[type[BaseException], ...]

    def initial(self, route: str, epoch: int) -> SourceOffset:
        """Where a new query starts (``startingOffsets``)."""
        ...

    def next(self, start: SourceOffset, drain_to: Any, limit: int | None) -> SourceOffset:
        """The end of the next batch from ``start`` (``start`` itself: nothing new), at most
        ``drain_to`` (a :meth:`drain_target`) and ``limit`` records."""
        ...

    def drain_target(self, planned: SourceOffset, plan: SwitchPlan) -> Any:
        """The cluster's ends now, for the partitions of ``planned``, less what the switch's
        destination is known to hold itself."""
        ...

    def drained(self, planned: SourceOffset, target: Any) -> bool:
        """Whether ``planned`` reaches ``target``."""
        ...

    def arrive(self, plan: SwitchPlan, planned: SourceOffset | None, hints: SwitchHints) -> Arrival:
        """Start positions here for a query leaving ``plan.source`` at ``planned``."""
        ...

    def crossing(self, start: SourceOffset, arrival: Arrival, limit: int | None) -> SourceOffset:
        """The first batch's end after ``arrival``."""
        ...

    def tasks(self, start: SourceOffset, end: SourceOffset, batch: str, hints: SwitchHints) -> list[ReadsPartition]:
        """The batch from ``start`` to ``end`` (on this cluster) as executor tasks; ``hints``:
        what committed batches tell a task that must move to another cluster."""
        ...

    def committed(self, end: SourceOffset) -> None:
        """Spark committed up to ``end`` (on this cluster): record it where the system can."""
        ...

    def close(self) -> None: ...
