"""A switch inside a micro-batch: a task whose cluster died under it reads on the new cluster.

When an executor's task stops getting records (or finds them gone) and the route has moved
to another cluster since the batch was planned, the task asks the core's translation for a
start on the new cluster for each of its partitions (from where its ranges began; MM2
checkpoints of the query's committed progress, offset syncs, the beginning) and reads up to
that cluster's end offsets of that moment. A task whose cluster lost the batch's records
meanwhile (a topic there created again: the driver marks the task ``rebuilt``) reads them on
another cluster of the route, where their copies are. A task run again that an earlier run
completed (it staged what it emitted) reads the new cluster from the beginning and emits
exactly that again (``exact`` plans): translation may start past some of those records, and
writers downstream name rows by their position.
That plan is stored in the config center under the
batch and the task's part, ``<ns>/replans/<group>/<batch>/<part>``; the first one stored
stays, so a retry or a replay of the batch after a driver restart reads exactly the same
ranges. The driver forgets a batch's plans when Spark commits it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from hotstandby.adapters.kafka.consumer.start_positions import Visit
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.doc_parsing import load_object
from hotstandby.configcenter.documents import Route
from hotstandby.configcenter.versioned import create_value, delete_keys, read_prefix, read_versioned
from hotstandby.errors import HotStandbyError, ValidationError
from hotstandby.logs import get_logger
from hotstandby.spark_integration.kafka.cluster import KafkaCluster
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.planning import Range

__all__ = ["STALL_S", "Replan", "Replans", "RouteMoved", "replan_task"]

#: A task that gets no record for this long asks whether the route moved away from its cluster.
STALL_S = 2.0  # a planned range is stored already: silence this long is a cluster gone, or stalled

log = get_logger("hotstandby.spark")


@dataclass(frozen=True)
class Replan:
    """Where one task reads instead: ranges on ``cluster`` at route epoch ``epoch``."""

    cluster: str
    epoch: int
    ranges: tuple[Range, ...]  # Kafka
    strategies: Mapping[str, int]
    ids: tuple[tuple[str, str, str], ...] = ()  # Pulsar: (partition's topic, start id, end id)
    exact: bool = False  # read what an earlier run of the task emitted (staged), from the beginning

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "cluster": self.cluster,
                "epoch": self.epoch,
                "ranges": [[r.topic, r.partition, r.start, r.end] for r in self.ranges],
                "ids": [list(i) for i in self.ids],
                "strategies": dict(sorted(self.strategies.items())),
                "exact": self.exact,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes, what: str) -> Replan:
        doc = load_object(what, raw)
        try:
            ranges = tuple(Range(str(t), int(p), int(a), int(b)) for t, p, a, b in doc["ranges"])
            strategies = {str(k): int(v) for k, v in dict(doc.get("strategies", {})).items()}
            ids = tuple((str(t), str(a), str(b)) for t, a, b in doc.get("ids", []))
            exact = doc.get("exact", False) is True
            return cls(str(doc["cluster"]), int(doc["epoch"]), ranges, strategies, ids, exact)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError(what, f"not a re-plan: {exc}") from None


class RouteMoved:
    """``moved()`` for a streaming task: has the route moved to another cluster since the batch
    was planned (asked at most every :data:`STALL_S`)?"""

    def __init__(
        self, center: ConfigCenter, route: str, cluster: str, epoch: int, allowed: frozenset[str] = frozenset()
    ) -> None:
        self._center, self._route, self._cluster, self._epoch = center, route, cluster, epoch
        self._allowed = allowed  # hotstandby.clusters.allowed: never moved to a cluster outside it
        self._asked = 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._asked < STALL_S:
            return False
        self._asked = now
        try:
            route = self._center.route(self._route)
        except HotStandbyError as exc:
            log.info("spark.route_unknown", route=self._route, error=str(exc))
            return False
        if self._allowed and route.active not in self._allowed:
            log.error("route.rejected", route=self._route, to=route.active, epoch=route.epoch,
                      reason="not in hotstandby.clusters.allowed")  # fmt: skip
            return False
        return route.epoch > self._epoch and route.active != self._cluster


class Replans:
    """The stored re-plans of one query's batches."""

    def __init__(self, center: ConfigCenter, group: str) -> None:
        self._center = center
        self._group = group

    def get(self, batch: str, part: int) -> Replan | None:
        key = self._center.keys.replan(self._group, batch, part)
        found = read_versioned(self._center, key)
        return None if found.value is None else Replan.from_json(found.value, key)

    def claim(self, batch: str, part: int, plan: Replan) -> Replan:
        """Store ``plan`` unless one is stored already; the stored one."""
        key = self._center.keys.replan(self._group, batch, part)
        stored = create_value(self._center, key, plan.to_json())
        return plan if stored.value is None else Replan.from_json(stored.value, key)

    def forget(self, batch: str) -> None:
        items = read_prefix(self._center, self._center.keys.replans(self._group, batch))
        delete_keys(self._center, [item.key for item in items])


def _elsewhere(route: Route, came_from: str, rebuilt: bool) -> str | None:
    """The cluster a task leaving ``came_from`` reads on: the route's active one; for a
    rebuilt task, another cluster of the route when the route is still on ``came_from``."""
    if route.active != came_from:
        return route.active
    return next((c for c in route.clusters if c != came_from), None) if rebuilt else None


def replan_task(
    center: ConfigCenter,
    options: SourceOptions,
    came_from: str,
    logical: str,
    ranges: tuple[Range, ...],
    *,
    rebuilt: bool = False,
    from_beginning: bool = False,
) -> Replan | None:
    """A plan on the route's active cluster for a task whose ranges were on ``came_from``;
    None when the route still names ``came_from`` (nothing to move to). ``from_beginning``:
    the partitions from their beginning there (a rebuilt task that knows what it emitted
    picks those records out; translation could start past them)."""
    route = center.route(options.route)
    name = _elsewhere(route, came_from, rebuilt)
    if name is None:
        return None
    spec = center.cluster(name)
    if spec.kind != "kafka":
        return None
    links = center.links()
    target = KafkaCluster(spec, options)
    try:
        topics = {t: lg for t, lg in target.topics(route.clusters, links).items() if lg == logical}
        partitions = {r.partition for r in ranges}
        slots = [s for s in target.slots(topics) if s[1] in partitions]
        marks = target.watermarks(slots)
        if from_beginning:
            starts, strategies = {s: marks[s][0] for s in slots}, Counter({"earlier-run": len(slots)})
        else:
            previous = Visit(cluster=came_from, positions={(r.topic, r.partition): r.start for r in ranges})
            starts, strategies = target.start_positions(previous, topics, slots, links)
    finally:
        target.close()
    moved = tuple(Range(t, p, starts[(t, p)], marks[(t, p)][1]) for t, p in slots if marks[(t, p)][1] > starts[(t, p)])
    return Replan(spec.name, route.epoch, moved, dict(strategies), exact=from_beginning)
