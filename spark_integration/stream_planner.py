"""The streaming source's driver side: offsets, batch plans, commits, and the switch.

One planner serves one query, in Spark's long-lived Python runner for the query's source. It
follows the route with the core's :class:`~hotstandby.failover.follower.RouteFollower` and
takes part in the one switch protocol:

* ``drain`` — the old cluster's end offsets at the flip (when it answers) cap the batches
  planned from now on; the drain is done once a planned batch ends there (bounded by
  ``hotstandby.drain.timeout.ms``). Spark runs a batch's predecessor and commits it before
  the batch, so nothing more is needed of the old cluster.
* the switch gate holds ``latestOffset`` from ``store`` to ``move``.
* ``store`` — nothing: every committed batch's identities are in the ledger already.
* ``connect`` — the physical topics on the new cluster and a start per partition from the
  core's translation (:meth:`KafkaCluster.start_positions`).
* ``move`` — the next offset is on the new cluster: its ``starts`` are those positions and
  its ``switch`` names the strategies (also logged as ``spark.switched``).

A query restarted from a checkpoint taken at an older epoch starts from the route as that
checkpoint names it, so the current route is a switch like any other.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import KafkaException

from hotstandby.adapters.kafka.start_positions import Visit
from hotstandby.configcenter.documents import Route
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteFollower
from hotstandby.failover.ledger.staged import StagedAcks
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import Seldom, get_logger
from hotstandby.spark_integration.kafka_cluster import KafkaCluster
from hotstandby.spark_integration.kafka_read import ReadTask
from hotstandby.spark_integration.offsets import SourceOffset
from hotstandby.spark_integration.options import EARLIEST, LATEST, SourceOptions
from hotstandby.spark_integration.planning import Slot, batch_ranges, cap, plan_tasks
from hotstandby.spark_integration.replan import Replans

__all__ = ["StreamPlanner", "batch_name"]

log = get_logger("hotstandby.spark")

_GATE_WAIT_S = 30.0  # latestOffset waits this long for a running switch, then plans nothing


def batch_name(end: SourceOffset) -> str:
    """The name a batch's staged acknowledgements are kept under: a digest of its end offset."""
    text = json.dumps(end.to_dict(), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _nested(flat: Mapping[Slot, int]) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in flat.items():
        out.setdefault(topic, {})[partition] = offset
    return out


def _flat(nested: Mapping[str, Mapping[int, int]]) -> dict[Slot, int]:
    return {(t, p): o for t, parts in nested.items() for p, o in parts.items()}


@dataclass(frozen=True)
class _Arrival:
    """Where the next batch starts after a switch."""

    cluster: KafkaCluster
    epoch: int
    logical: Mapping[str, str]
    starts: Mapping[Slot, int]
    strategies: Mapping[str, int]
    came_from: str
    came_from_epoch: int


class StreamPlanner:
    """The driver side of one streaming query (see the module docs)."""

    peer_labels = None  # a query has one planner: no peers to wait for

    def __init__(self, options: SourceOptions, since: SourceOffset | None) -> None:
        self._options = options
        group = options.require_group()
        client = ClientOptions(route=options.route, settings=options.settings, client_id=f"spark-{group}",
                               drain_timeout_ms=options.drain_timeout_ms,
                               timestamp_skew_ms=options.timestamp_skew_ms)  # fmt: skip
        self._follower = RouteFollower(client, "kafka", role="spark", labels={"group": group})
        self._lock = threading.RLock()
        self.gate = SwitchGate(self._lock)
        self._staged = StagedAcks(self._follower.center, group, owner=client.client_id)
        self._replans = Replans(self._follower.center, group)
        self._timestamps: dict[Slot, int] = {}
        self._drain_to: dict[Slot, int] | None = None
        self._arrival: _Arrival | None = None
        self._prepared: _Arrival | None = None
        self._old: KafkaCluster | None = None
        self._planned: SourceOffset | None = since
        self._seldom = Seldom(log)
        route = self._follower.initial_route
        try:
            if since is None or (since.cluster, since.epoch) == (route.active, route.epoch):
                self._cluster = KafkaCluster(self._follower.initial_cluster, options)
                self._epoch = route.epoch
                self._follower.join(self, self.gate, lambda: self._cluster.spec)
            else:
                self._cluster = KafkaCluster(self._follower.cluster(since.cluster), options)
                self._epoch = since.epoch
                at = replace(route, active=since.cluster, epoch=since.epoch)
                self._follower.join(self, self.gate, lambda: self._cluster.spec, since=at)
        except BaseException:
            self._follower.close()
            raise

    # -- offsets --------------------------------------------------------------------------

    def _topics(self, cluster: KafkaCluster) -> dict[str, str]:
        return cluster.topics(self._follower.route.clusters, self._follower.center.links())

    def initial(self) -> SourceOffset:
        """Where a new query starts: ``startingOffsets`` / ``startingTimestamp`` on the active cluster."""
        with self._lock:
            cluster, opts = self._cluster, self._options
            topics = self._topics(cluster)
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
            return SourceOffset(self._options.route, self._epoch, cluster.spec.name, _nested(positions), topics)

    def latest(self, start: SourceOffset, limit: int | None) -> SourceOffset:
        """The end of the next batch from ``start`` (``start`` itself: nothing to read)."""
        if not self.gate.wait_open(_GATE_WAIT_S):
            return start
        with self._lock:
            arrival = self._arrival
            try:
                if arrival is not None and (start.cluster, start.epoch) != (arrival.cluster.spec.name, arrival.epoch):
                    end = self._crossing(start, arrival, limit)
                elif (start.cluster, start.epoch) == (self._cluster.spec.name, self._epoch):
                    self._arrival = None
                    end = self._next(start, limit)
                else:
                    return start  # planned before a switch that is still on its way
            except KafkaException as exc:  # the cluster does not answer: no batch until it does or a flip
                self._seldom.warning("spark.cluster_unanswered", cluster=self._cluster.spec.name, error=str(exc))
                return start
            self._planned = end
            self.gate.notify()
            return end

    def _next(self, start: SourceOffset, limit: int | None) -> SourceOffset:
        cluster = self._cluster
        topics = self._topics(cluster)
        slots = cluster.slots(topics)
        marks = cluster.watermarks(slots)
        begin = _flat(start.positions)
        starts = {s: marks[s][0] for s in slots if s not in begin}
        latest = {s: high for s, (_, high) in marks.items()}
        if self._drain_to is not None:
            latest = {s: min(high, self._drain_to.get(s, high)) for s, high in latest.items()}
        ends = cap({**begin, **starts}, latest, limit)
        if all(ends[s] <= begin.get(s, starts.get(s, 0)) for s in ends) and not starts:
            return start
        logical = {**start.logical, **{t: lg for t, lg in topics.items() if t != lg}}
        return SourceOffset(start.route, start.epoch, start.cluster, _nested(ends), logical, _nested(starts))

    def _crossing(self, start: SourceOffset, arrival: _Arrival, limit: int | None) -> SourceOffset:
        marks = arrival.cluster.watermarks(arrival.starts)
        ends = cap(arrival.starts, {s: max(high, arrival.starts[s]) for s, (_, high) in marks.items()}, limit)
        switch: dict[str, Any] = {"from": arrival.came_from, "from_epoch": arrival.came_from_epoch,
                                  "strategies": dict(sorted(arrival.strategies.items()))}  # fmt: skip
        return SourceOffset(start.route, arrival.epoch, arrival.cluster.spec.name, _nested(ends),
                            dict(arrival.logical), _nested(arrival.starts), switch)  # fmt: skip

    # -- batches --------------------------------------------------------------------------

    def tasks(self, start: SourceOffset, end: SourceOffset) -> list[ReadTask]:
        """The batch from ``start`` to ``end`` as executor tasks. The batch ending at ``start``
        is committed (Spark plans a batch only after the one before it): its staged
        identities go into the ledger first, in case the driver died before ``commit``."""
        self._staged.commit(batch_name(start))
        spec = self._follower.cluster(end.cluster)
        tasks = plan_tasks(batch_ranges(start, end), end.logical_of, self._options.min_partitions)
        name = batch_name(end)
        return [ReadTask(spec, self._options, end.epoch, task, name, i) for i, task in enumerate(tasks)]

    def commit(self, end: SourceOffset) -> None:
        """Spark committed the batch ending at ``end``: its identities go into the ledger; its
        positions become the group's committed offsets (for MM2 checkpoints)."""
        name = batch_name(end)
        stamps = self._staged.commit(name)
        self._replans.forget(name)
        with self._lock:
            self._timestamps.update(_flat(stamps))
            cluster = self._cluster if end.cluster == self._cluster.spec.name else None
        if cluster is not None:
            try:
                cluster.commit(end.positions)
            except KafkaException as exc:
                log.info("spark.offsets_not_committed", cluster=end.cluster, error=str(exc))

    # -- the switch protocol --------------------------------------------------------------

    def drain(self, plan: SwitchPlan) -> None:
        with self._lock:
            cluster, planned = self._cluster, self._planned
        if planned is None or planned.cluster != cluster.spec.name:
            return
        try:
            ends = {s: high for s, (_, high) in cluster.watermarks(_flat(planned.positions)).items()}
        except KafkaException as exc:
            log.info("spark.drain_skipped", cluster=cluster.spec.name, error=str(exc))
            return
        with self._lock:
            self._drain_to = ends

            def drained() -> bool:
                done = self._planned
                return done is not None and all(_flat(done.positions).get(s, -1) >= e for s, e in ends.items())

            ok = self.gate.lock.wait_for(drained, plan.drain_timeout_s)
        log.info("spark.drained" if ok else "spark.drain_incomplete", cluster=cluster.spec.name, partitions=len(ends))

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to do: committed batches' identities are in the ledger already."""

    def connect(self, plan: SwitchPlan) -> None:
        with self._lock:
            planned = self._planned
        target = KafkaCluster(plan.destination, self._options)
        try:
            topics = target.topics(plan.target.clusters, plan.links)
            slots = target.slots(topics)
            positions = _flat(planned.positions) if planned is not None else {}
            if planned is not None and plan.destination.name == planned.cluster:
                marks = target.watermarks(slots)
                starts = {s: positions.get(s, marks[s][0]) for s in slots}
                strategies: Counter[str] = Counter({"same-cluster": len(slots)})
            else:
                previous = Visit(cluster=plan.source.name, positions=positions, timestamps=dict(self._timestamps))
                starts, strategies = target.start_positions(previous, topics, slots, plan.links)
        except BaseException:
            target.close()
            raise
        self._prepared = _Arrival(target, plan.target.epoch, {t: lg for t, lg in topics.items() if t != lg}, starts,
                                  strategies, plan.source.name, plan.current.epoch)  # fmt: skip

    def move(self, plan: SwitchPlan) -> None:
        arrival = self._prepared
        assert arrival is not None
        self._prepared = None
        with self._lock:
            self._old = self._cluster
            self._cluster, self._epoch, self._arrival, self._drain_to = arrival.cluster, arrival.epoch, arrival, None

    def resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        if old is not None and old is not self._cluster:
            old.close()
        arrival = self._arrival
        if arrival is not None:
            log.info("spark.switched", route=plan.target.name, cluster=arrival.cluster.spec.name, epoch=arrival.epoch,
                     came_from=arrival.came_from, strategies=dict(arrival.strategies))  # fmt: skip

    def abort(self, plan: SwitchPlan) -> None:
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.cluster.close()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def route(self) -> Route:
        return self._follower.route

    def close(self) -> None:
        self._follower.close()
        with self._lock:
            self._cluster.close()
