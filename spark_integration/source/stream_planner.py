"""The streaming source's driver side: offsets, batch plans and commits.

What differs between messaging systems is in a
:class:`~hotstandby.spark_integration.source.cluster_plan.ClusterPlan` per cluster. One planner
serves one query, in Spark's long-lived Python runner for the query's source. It follows the
route with the core's :class:`~hotstandby.failover.follower.RouteFollower`; its part in a
switch is :class:`~hotstandby.spark_integration.source.planner_switch.PlannerSwitch`, over the
:class:`~hotstandby.spark_integration.source.plan_state.PlanState` both share.

A query restarted from a checkpoint taken at an older epoch starts from the route as that
checkpoint names it, so the current route is a switch like any other.
"""

from __future__ import annotations

from dataclasses import replace

from hotstandby.configcenter.documents import Route
from hotstandby.configcenter.polling import patiently
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteFollower
from hotstandby.failover.ledger.staged import StagedAcks
from hotstandby.logs import Seldom, get_logger
from hotstandby.spark_integration.source.cluster_plan import PlanContext, ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.plan_state import PlanState, batch_name
from hotstandby.spark_integration.source.planner_switch import PlannerSwitch, PlanOpener
from hotstandby.spark_integration.source.replan import Replans

__all__ = ["StreamPlanner"]

log = get_logger("hotstandby.spark")

_GATE_WAIT_S = 30.0  # latestOffset waits this long for a running switch, then plans nothing


class StreamPlanner:
    """The driver side of one streaming query (see the module docs)."""

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
        self._staged = StagedAcks(center, group, owner=client.client_id)
        self._replans = Replans(center, group)
        self._seldom = Seldom(log)
        route = self._follower.initial_route
        try:
            if since is None or (since.cluster, since.epoch) == (route.active, route.epoch):
                state = PlanState(opener(self._follower.initial_cluster, options, self._context), route.epoch, since)
                at = None
            else:
                state = PlanState(opener(self._follower.cluster(since.cluster), options, self._context),
                                  since.epoch, since)  # fmt: skip
                at = replace(route, active=since.cluster, epoch=since.epoch)
            self._state = state
            self.gate = state.gate
            self._switch = PlannerSwitch(state, self._staged, opener, options, self._context)
            self._follower.join(self._switch, state.gate, lambda: state.cluster.spec, since=at)
        except BaseException:
            self._follower.close()
            raise

    # -- offsets --------------------------------------------------------------------------

    def initial(self) -> SourceOffset:
        """Where a new query starts: ``startingOffsets`` on the active cluster."""
        with self._state.lock:
            return self._state.cluster.initial(self._options.route, self._state.epoch)

    def latest(self, start: SourceOffset, limit: int | None) -> SourceOffset:
        """The end of the next batch from ``start`` (``start`` itself: nothing to read)."""
        state = self._state
        if not state.gate.wait_open(_GATE_WAIT_S):
            return start
        with state.lock:
            state.asked += 1
            arrival, cluster, drain_to = state.arrival, state.cluster, state.drain_to
            try:
                if arrival is not None and (start.cluster, start.epoch) != (arrival.plan.spec.name, arrival.epoch):
                    end = arrival.plan.crossing(start, arrival, limit)
                elif (start.cluster, start.epoch) == (cluster.spec.name, state.epoch):
                    state.arrival = None
                    end = cluster.next(start, drain_to, None if drain_to is not None else limit)
                else:  # not where this planner stands, and no switch brings it here
                    self._seldom.warning("spark.offset_elsewhere", cluster=start.cluster, epoch=start.epoch,
                                         planner_cluster=cluster.spec.name, planner_epoch=state.epoch)  # fmt: skip
                    return start
            except cluster.unreachable as exc:  # no batch until the cluster answers or a flip
                self._seldom.warning("spark.cluster_unanswered", cluster=cluster.spec.name, error=str(exc))
                return start
            state.planned = end
            state.lock.notify_all()
            return end

    # -- batches --------------------------------------------------------------------------

    def tasks(self, start: SourceOffset, end: SourceOffset) -> list[ReadsPartition]:
        """The batch from ``start`` to ``end`` as executor tasks. The batch ending at ``start``
        is committed (Spark plans a batch only after the one before it): its staged
        identities go into the ledger first, in case the driver died before ``commit``."""
        hints = patiently(lambda: self._staged.commit(batch_name(start)), self._options.settings.etcd_timeout)
        state = self._state
        with state.lock:
            state.hints.merge(hints)
            known = state.hints.copy()
            current = state.cluster if state.cluster.spec.name == end.cluster else None
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
        state = self._state
        with state.lock:
            state.hints.merge(hints)
            cluster = state.cluster if end.cluster == state.cluster.spec.name else None
        if cluster is not None:
            try:
                cluster.committed(end)
            except cluster.unreachable as exc:
                log.info("spark.progress_not_recorded", cluster=end.cluster, error=str(exc))

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def route(self) -> Route:
        return self._follower.route

    def close(self) -> None:
        self._follower.close()
        with self._state.lock:
            self._state.cluster.close()
