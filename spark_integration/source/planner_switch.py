"""A streaming query's switch participant (the core's protocol:
:class:`~hotstandby.failover.switch_protocol.SwitchParticipant`), over the query's
:class:`~hotstandby.spark_integration.source.plan_state.PlanState`:

* ``drain`` — the old cluster's end offsets at the flip (when it answers; in MM2's copies of
  the destination's topics, the offsets at the flip's time) cap the batches planned from now
  on; the drain is done once a planned batch ends there (bounded by
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
"""

from __future__ import annotations

from collections.abc import Callable

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.ledger.staged import StagedAcks
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger
from hotstandby.spark_integration.source.cluster_plan import Arrival, ClusterPlan, PlanContext
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.plan_state import PlanState, batch_name

__all__ = ["PlanOpener", "PlannerSwitch"]

log = get_logger("hotstandby.spark")

_PROBE_TIMEOUT_S = 2.0  # per broker of the cluster left, before its drain
_RUNNING_BATCH = 6  # drain timeouts a drain waits at most for the batch running at the flip to end

#: ``opener(spec, options, context)``: the plan for a cluster of the route's kind.
PlanOpener = Callable[[ClusterSpec, SourceOptions, PlanContext], ClusterPlan]


class PlannerSwitch:
    """One query's part in a switch (see the module docs)."""

    peer_labels = None  # a query has one planner: no peers to wait for

    def __init__(self, state: PlanState, staged: StagedAcks, opener: PlanOpener, options: SourceOptions,
                 context: PlanContext) -> None:  # fmt: skip
        self._state = state
        self._staged = staged
        self._opener = opener
        self._options = options
        self._context = context
        self._prepared: Arrival | None = None  # built by connect(), used by move()
        self._old: ClusterPlan | None = None  # the plan left by move(), closed by resume()

    def drain(self, plan: SwitchPlan) -> None:
        state = self._state
        with state.lock:
            cluster, planned = state.cluster, state.planned
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
        with state.lock:
            state.drain_to = target
            asked = state.asked

            def drained() -> bool:
                done = state.planned
                return done is not None and done.cluster == cluster.spec.name and cluster.drained(done, target)

            # Spark plans the next batch (to the target at once) only when the batch running at
            # the flip has ended: the timeout counts from then, the wait for it is bounded apart.
            # A drain cut short leaves records only the old cluster holds (copies from a cluster
            # rebuilt empty since) behind for good.
            state.lock.wait_for(lambda: state.asked > asked or drained(), plan.drain_timeout_s * _RUNNING_BATCH)
            ok = state.lock.wait_for(drained, plan.drain_timeout_s)
        log.info("spark.drained" if ok else "spark.drain_incomplete", cluster=cluster.spec.name)

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to do: committed batches' identities are in the ledger already."""

    def connect(self, plan: SwitchPlan) -> None:
        with self._state.lock:
            planned, hints = self._state.planned, self._state.hints.copy()
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
        state = self._state
        with state.lock:
            self._old = state.cluster
            state.cluster, state.epoch, state.arrival, state.drain_to = arrival.plan, arrival.epoch, arrival, None

    def resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        state = self._state
        if old is not None and old is not state.cluster:
            old.close()
        arrival = state.arrival
        if arrival is not None:
            log.info("spark.switched", route=plan.target.name, cluster=arrival.plan.spec.name, epoch=arrival.epoch,
                     came_from=arrival.came_from, strategies=dict(arrival.strategies))  # fmt: skip

    def abort(self, plan: SwitchPlan) -> None:
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.plan.close()
