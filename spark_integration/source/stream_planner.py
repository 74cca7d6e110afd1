"""The streaming source's driver side: offsets, batch plans, commits, and the switch.

What differs between messaging systems is in a
:class:`~hotstandby.spark_integration.source.cluster_plan.ClusterPlan` per cluster. One planner serves one query, in Spark's long-lived Python runner for the query's source. It
follows the route with the core's :class:`~hotstandby.failover.follower.RouteFollower` and
takes part in the one switch protocol:

* ``drain`` — the old cluster's end offsets at the flip (when it answers; in MM2's copies of
  the destination's topics, the offsets at the flip's time) cap the batches planned from now on; the drain is done once a planned batch ends there (bounded by
  ``hotstandby.drain.timeout.ms``, counted from the end of the batch running at the flip, which
  it waits for up to six times as long). The next batch goes there at once, whatever
  ``maxOffsetsPerTrigger`` says: a query far behind would otherwise leave most of its backlog
  on the old cluster when the timeout ends the drain, and what the new cluster does not hold
  (a remote copy whose origin came back empty) would never be read. Spark runs a batch's
  predecessor and commits it before the batch, so nothing more is needed of the old cluster.
* the switch gate holds ``latestOffset`` from ``store`` to ``move``.
* ``store`` — nothing: every committed batch's identities are in the ledger already.
* ``connect`` — the topics on the new cluster and a start per partition from the core's
  translation (:meth:`ClusterPlan.arrive`).
* ``move`` — the next offset is on the new cluster: its ``starts`` are those positions and
  its ``switch`` names the strategies (also logged as ``spark.switched``).

A query restarted from a checkpoint taken at an older epoch starts from the route as that
checkpoint names it, so the current route is a switch like any other.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.configcenter.polling import patiently
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteFollower
from hotstandby.failover.ledger.staged import StagedAcks, SwitchHints
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import Seldom, get_logger
from hotstandby.spark_integration.source.cluster_plan import Arrival, ClusterPlan, PlanContext, ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.replan import Replans

__all__ = ["PlanOpener", "StreamPlanner", "batch_name"]

log = get_logger("hotstandby.spark")

_GATE_WAIT_S = 30.0  # latestOffset waits this long for a running switch, then plans nothing
_PROBE_TIMEOUT_S = 2.0  # per broker of the cluster left, before its drain
_RUNNING_BATCH = 6  # drain timeouts a drain waits at most for the batch running at the flip to end

#: ``opener(spec, options, context)``: the plan for a cluster of the route's kind.
PlanOpener = Callable[[ClusterSpec, SourceOptions, PlanContext], ClusterPlan]


def batch_name(end: SourceOffset) -> str:
    """The name a batch's staged acknowledgements are kept under: a digest of its end offset."""
    text = json.dumps(end.to_dict(), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class StreamPlanner:
    """The driver side of one streaming query (see the module docs)."""

    peer_labels = None  # a query has one planner: no peers to wait for

    def __init__(self, options: SourceOptions, since: SourceOffset | None, kind: str, opener: PlanOpener) -> None:
        self._options = options
        self._opener = opener
        group = options.require_group()
        client = ClientOptions(route=options.route, settings=options.settings, client_id=f"spark-{group}",
                               drain_timeout_ms=options.drain_timeout_ms,
                               timestamp_skew_ms=options.timestamp_skew_ms,
                               allowed_clusters=options.allowed_clusters)  # fmt: skip
        self._follower = RouteFollower(client, kind, role="spark", labels={"group": group})
        center = self._follower.center
        self._context = PlanContext(clusters=lambda: self._follower.route.clusters, links=center.links,
                                    registered=center.registered_topics, spec=center.cluster)  # fmt: skip
        self._lock = threading.RLock()
        self.gate = SwitchGate(self._lock)
        self._staged = StagedAcks(self._follower.center, group, owner=client.client_id)
        self._replans = Replans(self._follower.center, group)
        self._hints = SwitchHints()  # from committed batches
        self._drain_to: Any = None
        self._arrival: Arrival | None = None
        self._prepared: Arrival | None = None
        self._old: ClusterPlan | None = None
        self._planned: SourceOffset | None = since
        self._asked = 0  # latestOffset calls: Spark asks once the running batch has ended
        self._seldom = Seldom(log)
        route = self._follower.initial_route
        try:
            if since is None or (since.cluster, since.epoch) == (route.active, route.epoch):
                self._cluster = opener(self._follower.initial_cluster, options, self._context)
                self._epoch = route.epoch
                self._follower.join(self, self.gate, lambda: self._cluster.spec)
            else:
                self._cluster = opener(self._follower.cluster(since.cluster), options, self._context)
                self._epoch = since.epoch
                at = replace(route, active=since.cluster, epoch=since.epoch)
                self._follower.join(self, self.gate, lambda: self._cluster.spec, since=at)
        except BaseException:
            self._follower.close()
            raise

    # -- offsets --------------------------------------------------------------------------

    def initial(self) -> SourceOffset:
        """Where a new query starts: ``startingOffsets`` on the active cluster."""
        with self._lock:
            return self._cluster.initial(self._options.route, self._epoch)

    def latest(self, start: SourceOffset, limit: int | None) -> SourceOffset:
        """The end of the next batch from ``start`` (``start`` itself: nothing to read)."""
        if not self.gate.wait_open(_GATE_WAIT_S):
            return start
        with self._lock:
            self._asked += 1
            arrival, cluster = self._arrival, self._cluster
            try:
                if arrival is not None and (start.cluster, start.epoch) != (arrival.plan.spec.name, arrival.epoch):
                    end = arrival.plan.crossing(start, arrival, limit)
                elif (start.cluster, start.epoch) == (cluster.spec.name, self._epoch):
                    self._arrival = None
                    end = cluster.next(start, self._drain_to, None if self._drain_to is not None else limit)
                else:  # not where this planner stands, and no switch brings it here
                    self._seldom.warning("spark.offset_elsewhere", cluster=start.cluster, epoch=start.epoch,
                                         planner_cluster=cluster.spec.name, planner_epoch=self._epoch)  # fmt: skip
                    return start
            except cluster.unreachable as exc:  # no batch until the cluster answers or a flip
                self._seldom.warning("spark.cluster_unanswered", cluster=cluster.spec.name, error=str(exc))
                return start
            self._planned = end
            self.gate.notify()
            return end

    # -- batches --------------------------------------------------------------------------

    def tasks(self, start: SourceOffset, end: SourceOffset) -> list[ReadsPartition]:
        """The batch from ``start`` to ``end`` as executor tasks. The batch ending at ``start``
        is committed (Spark plans a batch only after the one before it): its staged
        identities go into the ledger first, in case the driver died before ``commit``."""
        hints = patiently(lambda: self._staged.commit(batch_name(start)), self._options.settings.etcd_timeout)
        with self._lock:
            self._hints.merge(hints)
            known = self._hints.copy()
            current = self._cluster if self._cluster.spec.name == end.cluster else None
        plan = current or self._opener(self._follower.cluster(end.cluster), self._options, self._context)
        try:
            return plan.tasks(start, end, batch_name(end), known)
        finally:
            if plan is not current:
                plan.close()

    def commit(self, end: SourceOffset) -> None:
        """Spark committed the batch ending at ``end``: its identities go into the ledger; the
        cluster records the progress where it can (Kafka: the group's offsets, for MM2)."""
        name = batch_name(end)
        try:
            hints = patiently(lambda: self._staged.commit(name), self._options.settings.etcd_timeout)
            self._replans.forget(name)
        except ConfigCenterUnavailable as exc:  # the next batch's planning merges it first
            log.warning("spark.commit_deferred", batch=name, error=str(exc))
            return
        with self._lock:
            self._hints.merge(hints)
            cluster = self._cluster if end.cluster == self._cluster.spec.name else None
        if cluster is not None:
            try:
                cluster.committed(end)
            except cluster.unreachable as exc:
                log.info("spark.progress_not_recorded", cluster=end.cluster, error=str(exc))

    # -- the switch protocol --------------------------------------------------------------

    def drain(self, plan: SwitchPlan) -> None:
        with self._lock:
            cluster, planned = self._cluster, self._planned
        if planned is None or planned.cluster != cluster.spec.name:
            return
        # A cluster that does not answer (killed) would hold the switch for its client's
        # operation timeout (Pulsar's 5 s per call) before the drain is skipped anyway.
        answer = probe_cluster(plan.source, timeout=_PROBE_TIMEOUT_S)
        if not answer.ok:
            log.info("spark.drain_skipped", cluster=cluster.spec.name, error=answer.detail)
            return
        try:
            target = cluster.drain_target(planned, plan)
        except cluster.unreachable as exc:
            log.info("spark.drain_skipped", cluster=cluster.spec.name, error=str(exc))
            return
        with self._lock:
            self._drain_to = target
            asked = self._asked

            def drained() -> bool:
                done = self._planned
                return done is not None and done.cluster == cluster.spec.name and cluster.drained(done, target)

            # Spark plans the next batch (to the target at once) only when the batch running at
            # the flip has ended: the timeout counts from then, the wait for it is bounded apart.
            # A drain cut short leaves records only the old cluster holds (copies from a cluster
            # rebuilt empty since) behind for good.
            self.gate.lock.wait_for(lambda: self._asked > asked or drained(), plan.drain_timeout_s * _RUNNING_BATCH)
            ok = self.gate.lock.wait_for(drained, plan.drain_timeout_s)
        log.info("spark.drained" if ok else "spark.drain_incomplete", cluster=cluster.spec.name)

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to do: committed batches' identities are in the ledger already."""

    def connect(self, plan: SwitchPlan) -> None:
        with self._lock:
            planned, hints = self._planned, self._hints.copy()
        if planned is not None:  # Spark commits the last batch only after the switch: its tasks tell more
            try:
                hints.merge(self._staged.peek(batch_name(planned)))
            except ConfigCenterUnavailable as exc:
                log.info("spark.hints_unread", batch=batch_name(planned), error=str(exc))
        target = self._opener(plan.destination, self._options, self._context)
        try:
            self._prepared = target.arrive(plan, planned, hints)
        except BaseException:
            target.close()
            raise

    def move(self, plan: SwitchPlan) -> None:
        arrival = self._prepared
        assert arrival is not None
        self._prepared = None
        with self._lock:
            self._old = self._cluster
            self._cluster, self._epoch, self._arrival, self._drain_to = arrival.plan, arrival.epoch, arrival, None

    def resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        if old is not None and old is not self._cluster:
            old.close()
        arrival = self._arrival
        if arrival is not None:
            log.info("spark.switched", route=plan.target.name, cluster=arrival.plan.spec.name, epoch=arrival.epoch,
                     came_from=arrival.came_from, strategies=dict(arrival.strategies))  # fmt: skip

    def abort(self, plan: SwitchPlan) -> None:
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.plan.close()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def route(self) -> Route:
        return self._follower.route

    def close(self) -> None:
        self._follower.close()
        with self._lock:
            self._cluster.close()
