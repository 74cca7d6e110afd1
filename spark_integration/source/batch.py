"""Batch reads (``spark.read.format("hotstandby")``): the logical topics on the route's active
cluster, planned by the cluster's system (Kafka: each topic and its MM2 copies, one task per
logical partition; Pulsar: one task per partition).

``hotstandby.dedupe`` (on by default) keeps one row per ``hs_id`` within a task, and a task
reads a logical partition whole, copies included: a batch job sees the logical stream once,
whatever was replicated or re-sent after a switch.
"""

from __future__ import annotations

from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigError
from hotstandby.spark_integration.source.cluster_plan import ReadsPartition
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.systems import system

__all__ = ["plan_batch"]


def plan_batch(options: SourceOptions) -> list[ReadsPartition]:
    """The tasks of a batch read, planned on the route's active cluster."""
    with ConfigCenter.open(options.settings) as center:
        route = center.route(options.route)
        if options.allowed_clusters and route.active not in options.allowed_clusters:
            raise ConfigError(
                f"route {options.route!r} is on {route.active!r}, which is not in hotstandby.clusters.allowed"
            )
        spec = center.cluster(route.active)
        links = center.links()
        registered = center.registered_topics(spec.name) if options.pattern is not None else []
    tasks: list[ReadsPartition] = system(spec.kind).batch_tasks(options, route, spec, links, registered)
    return tasks
