"""A Kafka ``Consumer``'s part in the switch protocol
(:mod:`hotstandby.failover.switch_protocol`):

* ``drain`` — a planned switch: the application reads the old cluster up to its end offsets at
  the flip (bounded by the drain timeout); skipped when the old cluster does not answer;
* ``store`` — every acknowledgement into the ledgers (with auto commit, what was returned
  counts as processed), then the old cluster's offsets if it answers;
* the core waits for the group's other members (``peer_labels``) to have stored theirs, so
  their ledgers are stored before anyone reads on the new cluster;
* ``connect`` — a raw consumer of the new cluster that answers, once no member is still
  leaving the group there (``group_leave``) and the members this process left behind there
  when that cluster died are removed from the group (``stale_members``);
* ``move`` — the swap: the new consumer subscribes (or is assigned the partitions the
  application assigned), each partition starts at its translated position
  (``start_positions``), nothing handed out on the old cluster is pending any more;
* ``resume`` — the old consumer leaves its group in the background, in turn with the others
  (``group_leave``; a thread that holds the config center open, so it may outlive the consumer).
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaException, TopicPartition

from hotstandby.adapters.kafka.consumer_assign import ManualAssignment
from hotstandby.adapters.kafka.consumer_commit import Committer
from hotstandby.adapters.kafka.consumer_fetch import Fetcher
from hotstandby.adapters.kafka.consumer_rebalance import Assignments
from hotstandby.adapters.kafka.consumer_state import ConsumerState, Slot, log
from hotstandby.adapters.kafka.group_leave import GroupLeaves
from hotstandby.adapters.kafka.stale_members import STALE
from hotstandby.adapters.kafka.start_positions import StartPositions, Visit
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.switch_protocol import SwitchPlan

__all__ = ["ConsumerSwitch"]

_CONNECT_TIMEOUT_S = 10.0  # the new cluster's metadata, before the switch gives up the old one


class ConsumerSwitch:
    """Implements :class:`~hotstandby.failover.switch_protocol.SwitchParticipant`."""

    def __init__(
        self, state: ConsumerState, fetcher: Fetcher, committer: Committer, assignments: Assignments,
        manual: ManualAssignment, leaves: GroupLeaves,
    ) -> None:  # fmt: skip
        self._s = state
        self._fetcher = fetcher
        self._committer = committer
        self._assignments = assignments
        self._manual = manual
        self.leaves = leaves
        self.peer_labels: Mapping[str, str] | None = {"group": state.group}
        self._new: RawConsumer | None = None  # connected to the target, not in use yet
        self._old: tuple[RawConsumer, ClusterSpec] | None = None  # given up by move, left by resume
        self._source_answered = False  # at the drain: MM2's offset syncs may be read there
        self.switches = 0

    def drain(self, plan: SwitchPlan) -> None:
        s = self._s
        timeout = plan.drain_timeout_s
        self._source_answered = False
        with s.lock:
            assignment = s.inner.assignment() if timeout > 0 else []
            try:
                ends = {
                    (tp.topic, tp.partition): s.inner.get_watermark_offsets(tp, timeout=min(timeout, 2.0))[1]
                    for tp in assignment
                }
            except KafkaException as exc:
                log.info("consumer.drain_skipped", cluster=plan.source.name, error=str(exc))
                return
            self._source_answered = bool(ends)
            start = self._start_positions(assignment)
        if not ends:
            return
        left: dict[Slot, int] = dict(ends)

        def drained() -> bool:
            nonlocal left
            with s.lock:
                positions = self._fetcher.positions(assignment)
                left = {
                    slot: end for slot, end in ends.items()
                    if max(positions.get(slot, -1), start.get(slot, -1)) < end
                }  # fmt: skip
            return not left

        # The application reads meanwhile: nothing to wait on but its progress.
        wait_until(drained, timeout, first=0.02, most=0.02)
        if left:
            log.warning("consumer.drain_incomplete", cluster=plan.source.name, partitions=len(left),
                        timeout_ms=round(timeout * 1000))  # fmt: skip
        else:
            log.info("consumer.drained", cluster=plan.source.name, partitions=len(ends))

    def _start_positions(self, assignment: list[TopicPartition]) -> dict[Slot, int]:
        """Where reading starts for partitions nothing was read from yet: committed or low mark."""
        inner = self._s.inner
        try:
            committed = inner.committed(assignment, timeout=2.0)
        except KafkaException:
            return {}
        out = {}
        for tp in committed:
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
            else:
                out[(tp.topic, tp.partition)] = inner.get_watermark_offsets(tp, timeout=2.0)[0]
        return out

    def store(self, plan: SwitchPlan) -> None:
        with self._s.lock:
            self._committer.settle()

    def connect(self, plan: SwitchPlan) -> None:
        new = self._s.connect(plan.destination)
        try:
            new.list_topics(timeout=_CONNECT_TIMEOUT_S)  # raises if the new cluster does not answer
        except BaseException:
            new.close()
            raise
        self._new = new
        self.leaves.await_none(plan.destination)
        STALE.remove(plan.destination, self._s.group)  # left there when it died: it must not wait for them

    def move(self, plan: SwitchPlan) -> None:
        s = self._s
        new, self._new = self._new, None
        assert new is not None, "move without connect"
        with s.lock:
            if s.closing:  # close() leaves the old cluster's group itself: nothing to move
                new.close()
                return
            self._old = (s.inner, s.spec)
            visit = Visit(plan.source.name, s.acks.acknowledged_positions(), dict(s.acks.last_acked_ts))
            self._assignments.restart(StartPositions(
                group=s.group, spec=plan.destination, previous=visit,
                links=dict(plan.links), skew_ms=s.options.timestamp_skew_ms, consumer=new,
                previous_spec=plan.source if self._source_answered else None,
            ))  # fmt: skip
            s.inner, s.spec = new, plan.destination
            s.ledgers.reset()  # claimed again as the new cluster assigns partitions
            s.acks.reset()
            self._fetcher.clear()  # fetched from the old cluster, never handed out
            if s.topics:
                self._assignments.resubscribe(dict(plan.links))
            elif s.manual:
                self._manual.reassign(dict(plan.links))
            self.switches += 1

    def resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        if old is not None:
            self.leaves.leave_in_background(*old)
        log.info("consumer.switched", client=self._s.options.client_id, source=plan.current.active,
                 to=plan.target.active, epoch=plan.target.epoch)  # fmt: skip

    def abort(self, plan: SwitchPlan) -> None:
        new, self._new = self._new, None
        if new is not None:
            new.close()
