"""Planning a streaming query on one Kafka cluster: offsets per physical topic-partition (the
topic and MM2's copies), Spark's ``maxOffsetsPerTrigger`` rule, one task per logical
partition, and the core's translation after a switch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException

from hotstandby.adapters.kafka.consumer.start_positions import Visit
from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.errors import ConfigError
from hotstandby.failover.ledger.staged import SwitchHints
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger
from hotstandby.spark_integration.kafka.cluster import KafkaCluster, copy_prefixes
from hotstandby.spark_integration.kafka.detour import detour
from hotstandby.spark_integration.kafka.read import ReadTask
from hotstandby.spark_integration.source.cluster_plan import Arrival, PlanContext, ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import EARLIEST, LATEST, MessageIds, SourceOptions
from hotstandby.spark_integration.source.planning import Range, Slot, batch_ranges, cap, plan_tasks, rebuilt, recreated
from hotstandby.spark_integration.source.schema import kafka_schema_ddl

__all__ = ["KafkaPlan", "batch_tasks", "open_plan", "schema_ddl"]


log = get_logger("hotstandby.spark")


def _nested(flat: Mapping[Slot, int]) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in flat.items():
        out.setdefault(topic, {})[partition] = offset
    return out


def _flat(nested: Mapping[str, Mapping[int, int]]) -> dict[Slot, int]:
    return {(t, p): o for t, parts in nested.items() for p, o in parts.items()}


def check_kafka_options(options: SourceOptions) -> None:
    """Refuse what means nothing for a Kafka route, naming it."""
    if isinstance(options.starting, MessageIds):
        raise ConfigError(f"startingOffsets with message ids is for Pulsar routes; route {options.route!r} is on Kafka")
    if options.pulsar_client or options.pulsar_reader:
        raise ConfigError(f"pulsar.* options are for Pulsar routes; route {options.route!r} is on Kafka")
    if options.max_entries_per_trigger:
        raise ConfigError(f"maxEntriesPerTrigger is for Pulsar routes (Kafka's is maxOffsetsPerTrigger); "
                          f"route {options.route!r} is on Kafka")  # fmt: skip


class KafkaPlan:
    """:class:`~hotstandby.spark_integration.source.cluster_plan.ClusterPlan` for a Kafka cluster."""

    unreachable: tuple[type[BaseException], ...] = (KafkaException,)

    def __init__(self, cluster: KafkaCluster, options: SourceOptions, context: PlanContext) -> None:
        check_kafka_options(options)
        self.cluster = cluster
        self.spec = cluster.spec
        self._options = options
        self._context = context
        self._ids_checked = False
        self._first_tasks = True

    def _topics(self) -> dict[str, str]:
        return self.cluster.topics(self._context.clusters(), self._context.links())

    def initial(self, route: str, epoch: int) -> SourceOffset:
        cluster, opts = self.cluster, self._options
        topics = self._topics()
        slots = cluster.slots(topics)
        marks = cluster.watermarks(slots)
        if opts.starting_timestamp is not None:
            positions = cluster.offsets_for_time(slots, opts.starting_timestamp)
        elif opts.starting == EARLIEST:
            positions = {s: low for s, (low, _) in marks.items()}
        elif opts.starting == LATEST:
            positions = {s: high for s, (_, high) in marks.items()}
        else:
            assert isinstance(opts.starting, Mapping)
            given = opts.starting
            positions = {}
            for (topic, p), (low, high) in marks.items():
                wanted = given.get(topics[topic], {}).get(p, given.get(topic, {}).get(p, -1))
                positions[(topic, p)] = low if wanted == -2 else high if wanted == -1 else wanted
        return SourceOffset(route, epoch, self.spec.name, _nested(positions), topics,
                            topic_ids=cluster.topic_ids(topics))  # fmt: skip

    def next(self, start: SourceOffset, drain_to: Any, limit: int | None) -> SourceOffset:
        topics = self._topics()
        slots = self.cluster.slots(topics)
        marks = self.cluster.watermarks(slots)
        ids = self._ids(start, topics)
        begin = _flat(start.positions)
        starts = {s: marks[s][0] for s in slots if s not in begin}
        reset = {**rebuilt(begin, marks), **recreated(begin, marks, start.topic_ids, ids)}
        if reset:
            log.warning("spark.partitions_rebuilt", cluster=self.spec.name, epoch=start.epoch,
                        partitions=sorted(f"{t}[{p}]" for t, p in reset))  # fmt: skip
            starts.update(reset)
            way = detour(self._context, self._options, self.spec.name, reset, {**topics, **start.logical})
            if way is not None and way.ranges:  # a batch of the copies alone; the new topic after it
                logical = {**start.logical, **{t: lg for t, lg in topics.items() if t != lg}}
                return SourceOffset(start.route, start.epoch, start.cluster, _nested({**begin, **starts}), logical,
                                    _nested(starts), topic_ids=ids, detour=way)  # fmt: skip
        latest = {s: high for s, (_, high) in marks.items()}
        if drain_to is not None:
            latest = {s: min(high, drain_to.get(s, high)) for s, high in latest.items()}
        ends = cap({**begin, **starts}, latest, limit)
        if all(ends[s] <= begin.get(s, starts.get(s, 0)) for s in ends) and not starts and ids == start.topic_ids:
            return start
        logical = {**start.logical, **{t: lg for t, lg in topics.items() if t != lg}}
        return SourceOffset(start.route, start.epoch, start.cluster, _nested(ends), logical, _nested(starts),
                            topic_ids=ids)  # fmt: skip

    def _ids(self, start: SourceOffset, topics: Mapping[str, str]) -> dict[str, str]:
        """The topics' ids: asked of the cluster once per planner (a query restarted from its
        checkpoint checks that its topics are the ones its offsets were taken on) and for
        topics the offset does not name yet; carried over otherwise."""
        known = {t: i for t, i in start.topic_ids.items() if t in topics}
        if self._ids_checked and known.keys() == topics.keys():
            return known
        self._ids_checked = True
        return {**known, **self.cluster.topic_ids(topics)}

    def drain_target(self, planned: SourceOffset, plan: SwitchPlan) -> dict[Slot, int]:
        """The ends now, but in MM2's copies of the destination's topics only up to the flip: a
        copy of what was written there after the flip is the destination's own, read there,
        and a drain batch (which goes past ``maxOffsetsPerTrigger``) would read it here too."""
        positions = _flat(planned.positions)
        target = {s: high for s, (_, high) in self.cluster.watermarks(positions).items()}
        flip = plan.target.at_ms
        prefixes = tuple(copy_prefixes(self.spec, [plan.destination.name], plan.links))
        theirs = [s for s in target if prefixes and s[0].startswith(prefixes)]
        if flip is not None and theirs:
            cut = self.cluster.offsets_for_time(theirs, flip - self._options.timestamp_skew_ms)
            target.update({s: max(positions[s], min(target[s], cut[s])) for s in theirs})
        return target

    def drained(self, planned: SourceOffset, target: Any) -> bool:
        reached = _flat(planned.positions)
        return all(reached.get(s, -1) >= end for s, end in target.items())

    def arrive(self, plan: SwitchPlan, planned: SourceOffset | None, hints: SwitchHints) -> Arrival:
        topics = self.cluster.topics(plan.target.clusters, plan.links)
        slots = self.cluster.slots(topics)
        positions = _flat(planned.positions) if planned is not None else {}
        ids = self.cluster.topic_ids(topics)
        self._ids_checked = True
        way = None
        if planned is not None and plan.destination.name == planned.cluster:
            # Back on the cluster the positions were taken on, after flips away: they hold
            # unless a topic there was created again meanwhile (the cluster rebuilt empty).
            marks = self.cluster.watermarks(slots)
            again = recreated(positions, marks, planned.topic_ids, ids)
            if again:
                log.warning("spark.topics_recreated", cluster=self.spec.name, epoch=planned.epoch,
                            partitions=sorted(f"{t}[{p}]" for t, p in again))  # fmt: skip
                way = detour(self._context, self._options, self.spec.name, again, {**topics, **planned.logical})
            starts = {s: again.get(s, positions.get(s, marks[s][0])) for s in slots}
            strategies: Counter[str] = Counter({"same-cluster": len(slots) - len(again)})
            if again:
                strategies["recreated"] = len(again)
        else:
            previous = Visit(cluster=plan.source.name, positions=positions, timestamps=_flat(hints.timestamps))
            starts, strategies = self.cluster.start_positions(previous, topics, slots, plan.links)
        logical = {t: lg for t, lg in topics.items() if t != lg}
        offset = SourceOffset(plan.target.name, plan.target.epoch, self.spec.name, _nested(starts), logical,
                              _nested(starts), topic_ids=ids, detour=way)  # fmt: skip
        return Arrival(self, offset, dict(strategies), plan.source.name, plan.current.epoch)

    def crossing(self, start: SourceOffset, arrival: Arrival, limit: int | None) -> SourceOffset:
        starts = _flat(arrival.starts.starts)
        way = arrival.starts.detour
        if way is not None and way.ranges:  # a batch of the copies alone; this cluster after it
            ends = dict(starts)
        else:
            marks = self.cluster.watermarks(starts)
            ends = cap(starts, {s: max(high, starts[s]) for s, (_, high) in marks.items()}, limit)
        switch: dict[str, Any] = {"from": arrival.came_from, "from_epoch": arrival.came_from_epoch,
                                  "strategies": dict(sorted(arrival.strategies.items()))}  # fmt: skip
        return SourceOffset(start.route, arrival.epoch, self.spec.name, _nested(ends), dict(arrival.starts.logical),
                            arrival.starts.starts, switch, topic_ids=arrival.starts.topic_ids, detour=way)  # fmt: skip

    def tasks(self, start: SourceOffset, end: SourceOffset, batch: str, hints: SwitchHints) -> list[ReadsPartition]:
        tasks = plan_tasks(batch_ranges(start, end), end.logical_of, self._options.min_partitions)
        gone = self._recreated_since(end) if self._first_tasks else set()
        self._first_tasks = False
        out: list[ReadsPartition] = [ReadTask(self.spec, self._options, end.epoch, task, batch, i,
                                              rebuilt=any(r.topic in gone for r in task.ranges))
                                     for i, task in enumerate(tasks)]  # fmt: skip
        way = end.detour
        if way is not None and way.ranges and self._context.spec is not None:
            spec = self._context.spec(way.cluster)
            logical = {t: lg for t, lg, *_ in way.ranges}
            there = plan_tasks([Range(t, p, a, b) for t, _, p, a, b in way.ranges], lambda t: logical.get(t, t),
                               self._options.min_partitions)  # fmt: skip
            out.extend(ReadTask(spec, self._options, end.epoch, task, batch, len(out) + i, detour=True)
                       for i, task in enumerate(there))  # fmt: skip
        return out

    def _recreated_since(self, end: SourceOffset) -> set[str]:
        """The topics of ``end`` created again since it was planned. Asked for the first batch a
        planner runs (after a driver restart, Spark runs the batch it had planned again; later
        batches are planned here on ids just checked). A cluster that does not answer now is
        left to the tasks (they move when the route does)."""
        if not end.topic_ids:
            return set()
        try:
            now = self.cluster.topic_ids(end.topic_ids)
        except KafkaException as exc:
            log.info("spark.topic_ids_unknown", cluster=self.spec.name, error=str(exc))
            return set()
        gone = {t for t, i in end.topic_ids.items() if now.get(t) != i}
        if gone:
            log.warning("spark.batch_records_gone", cluster=self.spec.name, epoch=end.epoch, topics=sorted(gone))
        return gone

    def committed(self, end: SourceOffset) -> None:
        self.cluster.commit(end.positions)

    def close(self) -> None:
        self.cluster.close()


def schema_ddl(options: SourceOptions) -> str:
    return kafka_schema_ddl(options.include_headers)


def open_plan(spec: ClusterSpec, options: SourceOptions, context: PlanContext) -> KafkaPlan:
    return KafkaPlan(KafkaCluster(spec, options), options, context)


def _resolve(
    wanted: str | Mapping[str, Mapping[int, int]],
    topics: Mapping[str, str],
    marks: Mapping[Slot, tuple[int, int]],
    default_latest: bool,
) -> dict[Slot, int]:
    out: dict[Slot, int] = {}
    for (topic, p), (low, high) in marks.items():
        if wanted == EARLIEST:
            out[(topic, p)] = low
        elif wanted == LATEST:
            out[(topic, p)] = high
        else:
            assert isinstance(wanted, Mapping)
            given = wanted.get(topic, wanted.get(topics[topic], {})).get(p, -1 if default_latest else -2)
            out[(topic, p)] = low if given == -2 else high if given == -1 else given
    return out


def batch_tasks(
    options: SourceOptions,
    route: Route,
    spec: ClusterSpec,
    links: Mapping[tuple[str, str], Link],
    registered: Sequence[str] = (),
) -> list[ReadsPartition]:
    """A batch read's tasks on the active cluster: each topic and its copies, ``startingOffsets``
    (or ``startingTimestamp``) to ``endingOffsets``, one task per logical partition (Kafka lists
    its topics: ``registered`` is not needed)."""
    check_kafka_options(options)
    cluster = KafkaCluster(spec, options)
    try:
        topics = cluster.topics(route.clusters, links)
        slots = cluster.slots(topics)
        marks = cluster.watermarks(slots)
        if options.starting_timestamp is not None:
            begin = cluster.offsets_for_time(slots, options.starting_timestamp)
        else:
            assert not isinstance(options.starting, MessageIds)  # check_kafka_options
            begin = _resolve(options.starting, topics, marks, default_latest=False)
        end = _resolve(options.ending, topics, marks, default_latest=True)
    finally:
        cluster.close()
    ranges = [Range(t, p, begin[(t, p)], end[(t, p)]) for t, p in slots if end[(t, p)] > begin[(t, p)]]
    tasks = plan_tasks(ranges, lambda t: topics.get(t, t), options.min_partitions)
    return [ReadTask(spec, options, route.epoch, task) for task in tasks]
