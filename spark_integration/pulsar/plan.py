"""Planning a streaming query on one Pulsar cluster: positions are message ids per partition
(``ids``: the last message a batch includes), one task per partition.

A message id names a message on one cluster only, and geo-replication keeps the topic's name:
after a switch the query reads each partition of the new cluster from the newest replicated
copy of it the query read (``__MSG_PROP_REPL_SOURCE_POSITION``, kept by committed batches),
else from its first message; the ledger drops what it emitted before. Pulsar counts no
offsets, so ``maxOffsetsPerTrigger`` does not apply; ``maxEntriesPerTrigger`` caps a batch in
entries (:mod:`~hotstandby.spark_integration.pulsar.limit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pulsar

from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.errors import ConfigError
from hotstandby.failover.ledger.staged import Copies, SwitchHints, copy_from
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.spark_integration.pulsar.cluster import PulsarCluster, full_topic, id_key, logical_partition
from hotstandby.spark_integration.pulsar.limit import capped_ends
from hotstandby.spark_integration.pulsar.read import PulsarReadTask
from hotstandby.spark_integration.source.cluster_plan import Arrival, PlanContext, ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import EARLIEST, LATEST, MessageIds, SourceOptions
from hotstandby.spark_integration.source.schema import PULSAR_SCHEMA_DDL

__all__ = [
    "PulsarPlan",
    "batch_tasks",
    "check_pulsar_options",
    "open_plan",
    "pulsar_tasks",
    "schema_ddl",
    "starting_ids",
]


def check_pulsar_options(options: SourceOptions) -> None:
    """Refuse what means nothing for a Pulsar route, naming it."""
    for given, name in ((options.client, "kafka.*"), (options.assign, "assign"),
                        (options.max_per_trigger, "maxOffsetsPerTrigger"),
                        (options.starting_timestamp, "startingTimestamp")):  # fmt: skip
        if given:
            raise ConfigError(f"{name} is for Kafka routes; route {options.route!r} is on Pulsar")
    if not (options.starting in (EARLIEST, LATEST) or isinstance(options.starting, MessageIds)):
        raise ConfigError('Pulsar routes take startingOffsets earliest, latest or {"topic": [message id bytes]}')
    if options.ending != LATEST:
        raise ConfigError("Pulsar routes take no endingOffsets")


def starting_ids(cluster: PulsarCluster, partitions: list[str], starting: str | MessageIds) -> dict[str, str]:
    """Where each partition starts (the kept id of the message before it; "" for the first):
    ``earliest``, ``latest``, or :class:`MessageIds` by partition or topic name (a partition
    not named starts at the latest)."""
    if starting == EARLIEST:
        return dict.fromkeys(partitions, "")
    if not isinstance(starting, MessageIds):
        return cluster.last_ids(partitions)
    given = {full_topic(name): value for name, value in starting.ids.items()}
    unknown = sorted(set(given) - set(partitions) - {logical_partition(t)[0] for t in partitions})
    if unknown:
        raise ConfigError(f"startingOffsets names {', '.join(unknown)}: not a subscribed topic or partition")
    out = {}
    for topic in partitions:
        value = given.get(topic, given.get(logical_partition(topic)[0], LATEST))
        if value == LATEST:
            out.update(cluster.last_ids([topic]))
        else:
            out[topic] = "" if value == EARLIEST else value
    return out


def pulsar_tasks(
    spec: ClusterSpec,
    options: SourceOptions,
    epoch: int,
    starts: Mapping[str, str],
    ends: Mapping[str, str],
    batch: str | None,
    copies: Copies | None = None,
) -> list[ReadsPartition]:
    """One task per partition with messages between ``starts`` and ``ends``; ``copies``: the
    newest copies committed batches read, per partition (a task that moves starts after them)."""
    out: list[ReadsPartition] = []
    for topic in sorted(ends):
        begin, end = starts.get(topic, ""), ends[topic]
        if end and id_key(end) > id_key(begin):
            logical, partition = logical_partition(topic)
            marks = tuple(sorted((o, m.text()) for o, m in (copies or {}).get(topic, {}).items()))
            out.append(PulsarReadTask(spec, options, epoch, topic, logical, partition, begin, end, batch, len(out),
                                      marks))  # fmt: skip
    return out


def _at_most(ids: Mapping[str, str], target: Mapping[str, str]) -> dict[str, str]:
    return {t: (target[t] if t in target and id_key(target[t]) < id_key(v) else v) for t, v in ids.items()}


class PulsarPlan:
    """:class:`~hotstandby.spark_integration.source.cluster_plan.ClusterPlan` for a Pulsar cluster."""

    unreachable: tuple[type[BaseException], ...] = (pulsar.PulsarException,)

    def __init__(self, cluster: PulsarCluster, options: SourceOptions, context: PlanContext) -> None:
        check_pulsar_options(options)
        self.cluster = cluster
        self.spec = cluster.spec
        self._options = options

    def initial(self, route: str, epoch: int) -> SourceOffset:
        partitions = self.cluster.partitions()
        starting = self._options.starting
        assert isinstance(starting, str | MessageIds)  # checked by check_pulsar_options
        ids = starting_ids(self.cluster, partitions, starting)
        return SourceOffset(route, epoch, self.spec.name, {}, ids=ids)

    def next(self, start: SourceOffset, drain_to: Any, limit: int | None) -> SourceOffset:
        partitions = self.cluster.partitions()
        ends = self.cluster.last_ids(partitions)
        if drain_to is not None:
            ends = _at_most(ends, drain_to)
        if limit is not None:
            ends = capped_ends(start.ids, ends, limit, self.cluster.first_after)
        new = {t: "" for t in partitions if t not in start.ids}
        if not new and all(id_key(ends[t]) <= id_key(start.ids.get(t, "")) for t in ends):
            return start
        ids = dict(start.ids)
        for topic, last in ends.items():
            if topic not in ids or id_key(last) > id_key(ids[topic]):
                ids[topic] = last
        return SourceOffset(start.route, start.epoch, start.cluster, {}, ids=ids, starts_ids=new)

    def drain_target(self, planned: SourceOffset, plan: SwitchPlan) -> dict[str, str]:
        # Geo-replication interleaves the destination's copies with this cluster's own
        # messages in one topic: no position parts what was written there after the flip.
        return self.cluster.last_ids(planned.ids)

    def drained(self, planned: SourceOffset, target: Any) -> bool:
        return all(id_key(planned.ids.get(t, "")) >= id_key(v) for t, v in target.items())

    def arrive(self, plan: SwitchPlan, planned: SourceOffset | None, hints: SwitchHints) -> Arrival:
        partitions = self.cluster.partitions()
        if planned is not None and plan.destination.name == planned.cluster:
            starts = {t: planned.ids.get(t, "") for t in partitions}
            strategies: Counter[str] = Counter({"same-cluster": len(partitions)})
        else:
            starts, strategies = {}, Counter()
            for topic in partitions:
                mark = copy_from(self.spec.name, hints.copies.get(topic, {}), plan.target.clusters)
                starts[topic] = self.cluster.after_copy(topic, mark)
                strategies["replicated-source-position" if starts[topic] else "earliest"] += 1
        offset = SourceOffset(plan.target.name, plan.target.epoch, self.spec.name, {}, ids=starts, starts_ids=starts)
        return Arrival(self, offset, dict(strategies), plan.source.name, plan.current.epoch)

    def crossing(self, start: SourceOffset, arrival: Arrival, limit: int | None) -> SourceOffset:
        starts = arrival.starts.starts_ids
        last = self.cluster.last_ids(starts)
        ids = {t: (v if id_key(v) > id_key(starts[t]) else starts[t]) for t, v in last.items()}
        if limit is not None:
            ids = capped_ends(starts, ids, limit, self.cluster.first_after)
        switch = {"from": arrival.came_from, "from_epoch": arrival.came_from_epoch,
                  "strategies": dict(sorted(arrival.strategies.items()))}  # fmt: skip
        return SourceOffset(start.route, arrival.epoch, self.spec.name, {}, ids=ids, starts_ids=starts, switch=switch)

    def tasks(self, start: SourceOffset, end: SourceOffset, batch: str, hints: SwitchHints) -> list[ReadsPartition]:
        same = start.cluster == end.cluster
        starts = {t: end.starts_ids[t] if t in end.starts_ids else (start.ids.get(t, "") if same else "")
                  for t in end.ids}  # fmt: skip
        return pulsar_tasks(self.spec, self._options, end.epoch, starts, end.ids, batch, hints.copies)

    def committed(self, end: SourceOffset) -> None:
        self.cluster.acknowledge(end.ids)

    def close(self) -> None:
        self.cluster.close()


def schema_ddl(options: SourceOptions) -> str:
    return PULSAR_SCHEMA_DDL


def open_plan(spec: ClusterSpec, options: SourceOptions, context: PlanContext) -> PulsarPlan:
    cluster = PulsarCluster(spec, options, subscription=f"hotstandby-spark-{options.require_group()}",
                            registered=lambda: context.registered(spec.name))  # fmt: skip
    return PulsarPlan(cluster, options, context)


def batch_tasks(
    options: SourceOptions,
    route: Route,
    spec: ClusterSpec,
    links: Mapping[tuple[str, str], Link],
    registered: Sequence[str] = (),
) -> list[ReadsPartition]:
    """A batch read's tasks: every partition from ``startingOffsets`` (``earliest``: its first
    message; ``latest``: nothing) to its last message when planned; ``topicsPattern`` matches
    ``registered`` (the cluster's topics in the config center)."""
    check_pulsar_options(options)
    cluster = PulsarCluster(spec, options, registered=lambda: registered)
    try:
        partitions = cluster.partitions()
        ends = cluster.last_ids(partitions)
        starting = options.starting
        assert isinstance(starting, str | MessageIds)
        starts = ends if starting == LATEST else starting_ids(cluster, partitions, starting)
    finally:
        cluster.close()
    return pulsar_tasks(spec, options, route.epoch, starts, ends, None)
