"""Where the records a Kafka cluster lost under a query are: copies on another cluster.

A topic created again on the query's cluster (the cluster rebuilt empty), or a partition whose
log now ends before the query's position, no longer holds what came after that position. MM2
copied it to the route's other clusters. The batch after the loss is found reads those copies
there — the other cluster's partitions of the same logical topics, from their beginning (MM2's
translation may name offsets of the topic created again; the query's ledger drops what was
emitted before) to their end at that moment — before the query goes on with the new topic from
its start. The ranges are kept in the batch's offset (:class:`~.offsets.Detour`), so a replay
reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from hotstandby.logs import get_logger
from hotstandby.spark_integration.kafka.cluster import KafkaCluster
from hotstandby.spark_integration.source.cluster_plan import PlanContext
from hotstandby.spark_integration.source.offsets import Detour
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.planning import Slot

__all__ = ["detour"]

log = get_logger("hotstandby.spark")


def detour(
    context: PlanContext, options: SourceOptions, lost_on: str, lost: Iterable[Slot], logical: dict[str, str]
) -> Detour | None:
    """Ranges on a cluster MM2 copies ``lost_on`` to, for the logical partitions of ``lost``
    (``logical``: physical -> logical topic on ``lost_on``); None when the route has no such
    Kafka cluster. Raises KafkaException when that cluster does not answer: the query waits
    for it rather than leave the copies behind."""
    if context.spec is None:
        return None
    wanted = {(logical.get(t, t), p) for t, p in lost}
    clusters, links = context.clusters(), context.links()
    for other in clusters:
        if other == lost_on or (lost_on, other) not in links:
            continue
        spec = context.spec(other)
        if spec.kind != "kafka":
            continue
        there = KafkaCluster(spec, options)
        try:
            topics = there.topics(clusters, links)
            slots = [s for s in there.slots(topics) if (topics[s[0]], s[1]) in wanted]
            marks = there.watermarks(slots)
        finally:
            there.close()
        ranges = tuple((t, topics[t], p, marks[(t, p)][0], marks[(t, p)][1]) for t, p in slots
                       if marks[(t, p)][1] > marks[(t, p)][0])  # fmt: skip
        log.warning("spark.detour", lost_on=lost_on, cluster=other, ranges=len(ranges),
                    records=sum(r[4] - r[3] for r in ranges))  # fmt: skip
        return Detour(other, ranges)
    return None
