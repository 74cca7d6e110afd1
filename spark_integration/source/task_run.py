"""What every streaming task does around reading its records, whatever the messaging system:
load the query's ledger of its logical partition, read the planned ranges (or the batch's stored
re-plan), move to the route's new cluster when its own stopped answering or lost the batch's
records (:mod:`.replan`), and stage what it emitted for the batch's commit. A batch read (no
group) only reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar

import pyarrow as pa

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import patiently
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import StagedAcks, StagedPart
from hotstandby.logs import get_logger
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.replan import Replan, Replans, RouteMoved

__all__ = ["ClusterGone", "PartReader", "TaskPlace", "run_task"]

log = get_logger("hotstandby.spark")


class ClusterGone(Exception):
    """The task's cluster stopped sending (or lost its records) and the route moved on."""


class PartReader(Protocol):
    filtered: int

    def emitted(self) -> StagedPart:
        """What the task emitted, to stage."""
        ...

    @property
    def emitted_count(self) -> int: ...


R = TypeVar("R", bound=PartReader)


@dataclass(frozen=True)
class TaskPlace:
    """Which task of which batch reads which logical partition, where it was planned."""

    options: SourceOptions
    spec: ClusterSpec
    epoch: int
    logical: str
    partition: int
    batch: str | None
    part: int
    rebuilt: bool = False  # the planned cluster lost the batch's records (a topic created again)


def run_task(
    place: TaskPlace,
    reader_for: Callable[[PartitionLedger, bool], R],
    planned: Callable[[R, Callable[[], bool]], Iterator[pa.RecordBatch]],
    replan: Callable[[ConfigCenter, Replans, StagedPart | None], Replan],
    replanned: Callable[[R, ClusterSpec, Replan, StagedPart | None], Iterator[pa.RecordBatch]],
) -> Iterator[pa.RecordBatch]:
    """Read a task (on an executor): ``reader_for(ledger, dedupe)`` makes its reader;
    ``planned(reader, moved)`` reads the planned ranges, raising :class:`ClusterGone` when the
    cluster is gone and ``moved()`` says the route left it; ``replan(center, replans, first)``
    claims the batch's re-plan on the route's cluster; ``replanned(reader, spec, plan, first)``
    reads it. ``first`` is what an earlier run of the task staged (a plan ``exact`` emits it again)."""
    opts = place.options
    if place.batch is None or not opts.group:  # a batch read: no ledger, nothing staged
        yield from planned(reader_for(PartitionLedger(), opts.dedupe), lambda: False)
        return
    with ConfigCenter.open(opts.settings) as center:
        staged = StagedAcks(center, opts.group)
        replans = Replans(center, opts.group)
        wait = opts.settings.etcd_timeout  # executors wait out a short etcd outage, as clients do
        batch = place.batch
        ledger = patiently(lambda: staged.load(place.logical, place.partition), wait)
        reader = reader_for(ledger, True)
        plan = patiently(lambda: replans.get(batch, place.part), wait)

        def staged_first() -> StagedPart | None:
            """What an earlier run that completed emitted: a run on another cluster emits it again."""
            return patiently(lambda: staged.part(batch, place.logical, place.partition, place.part), wait)

        first = staged_first() if place.rebuilt or (plan is not None and plan.exact) else None
        if plan is None and place.rebuilt:  # its records are gone from its cluster: read their copies
            plan = patiently(lambda: replan(center, replans, first), wait)
        elif plan is None:
            try:
                moved = RouteMoved(center, opts.route, place.spec.name, place.epoch, opts.allowed_clusters)
                yield from planned(reader, moved)
            except ClusterGone:
                first = staged_first()
                plan = patiently(lambda: replan(center, replans, first), wait)
        if plan is not None:
            spec = patiently(lambda: center.cluster(plan.cluster), wait)
            yield from replanned(reader, spec, plan, first if plan.exact else None)
        emitted = reader.emitted()
        patiently(lambda: staged.stage(batch, place.part, emitted), wait)
        if reader.filtered:
            log.info("spark.task_filtered", topic=place.logical, partition=place.partition, filtered=reader.filtered,
                     emitted=reader.emitted_count, cluster=place.spec.name)  # fmt: skip
