"""Batch reads (``spark.read.format("hotstandby")``): the logical topics on the route's active
cluster — each topic and its MM2 copies — from ``startingOffsets`` to ``endingOffsets``.

A logical partition is read by one task, copies included, so ``hotstandby.dedupe`` (on by
default) keeps one row per ``hs_id``: a batch job sees the logical stream once, whatever was
replicated or re-sent after a switch.
"""

from __future__ import annotations

from collections.abc import Mapping

from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigError
from hotstandby.spark_integration.kafka_cluster import KafkaCluster
from hotstandby.spark_integration.kafka_read import ReadTask
from hotstandby.spark_integration.options import EARLIEST, LATEST, SourceOptions
from hotstandby.spark_integration.planning import Range, Slot, plan_tasks

__all__ = ["plan_batch"]


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


def plan_batch(options: SourceOptions) -> list[ReadTask]:
    """The tasks of a batch read, planned on the route's active cluster."""
    with ConfigCenter.open(options.settings) as center:
        route = center.route(options.route)
        spec = center.cluster(route.active)
        if spec.kind != "kafka":
            raise ConfigError(f"route {options.route!r} is on {spec.kind} cluster {spec.name!r}; "
                              "the Spark source reads Kafka routes")  # fmt: skip
        links = center.links()
    cluster = KafkaCluster(spec, options)
    try:
        topics = cluster.topics(route.clusters, links)
        slots = cluster.slots(topics)
        marks = cluster.watermarks(slots)
        if options.starting_timestamp is not None:
            begin = cluster.offsets_for_time(slots, options.starting_timestamp)
        else:
            begin = _resolve(options.starting, topics, marks, default_latest=False)
        end = _resolve(options.ending, topics, marks, default_latest=True)
    finally:
        cluster.close()
    ranges = [Range(t, p, begin[(t, p)], end[(t, p)]) for t, p in slots if end[(t, p)] > begin[(t, p)]]
    tasks = plan_tasks(ranges, lambda t: topics.get(t, t), options.min_partitions)
    return [ReadTask(spec, options, route.epoch, task) for task in tasks]
