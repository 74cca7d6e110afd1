"""A Kafka ``Consumer``'s part in the switch protocol
(:mod:`hotstandby.failover.switch_protocol`):

* ``drain`` — a planned switch: the application reads the old cluster up to its end offsets at
  the flip (bounded by the drain timeout); skipped when the old cluster does not answer. Copies
  of the new cluster's records that it has lost (a failback to a cluster that came back empty:
  ``only_copies``) are read to their end past the drain timeout, for as long as the
  application keeps reading them;
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

import functools
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaException, TopicPartition

from hotstandby.adapters.kafka.consumer.assign import ManualAssignment
from hotstandby.adapters.kafka.consumer.commit import Committer
from hotstandby.adapters.kafka.consumer.fetch import Fetcher
from hotstandby.adapters.kafka.consumer.group_leave import GroupLeaves
from hotstandby.adapters.kafka.consumer.only_copies import copies_only_here
from hotstandby.adapters.kafka.consumer.rebalance import Assignments
from hotstandby.adapters.kafka.consumer.stale_members import STALE
from hotstandby.adapters.kafka.consumer.start_positions import StartPositions, Visit
from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot, log
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.switch_protocol import SwitchPlan

__all__ = ["ConsumerSwitch"]

_CONNECT_TIMEOUT_S = 10.0  # the new cluster's metadata, before the switch gives up the old one
_ASK_TIMEOUT_S = 2.0  # the old cluster's end offsets at the drain
# Reading the only copies left of records the new cluster lost: the drain goes on while the
# application's position there moves at least once within this (or the drain timeout if longer).
_COPIES_STALL_S = 60.0


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
            assignment = s.inner.assignment()
            logical = dict(s.logical)
        # Asked through a consumer of its own: librdkafka holds a consumer's poll while the same
        # handle waits for such an answer, and a hung old cluster would hold the application for
        # the query's timeout. Asked even without a drain timeout: copies only here are read
        # all the same.
        probe = s.connect(plan.source, joins=False)
        try:
            ends = {
                (tp.topic, tp.partition): probe.get_watermark_offsets(tp, timeout=_ASK_TIMEOUT_S)[1]
                for tp in assignment
            }
            start = self._start_positions(probe, assignment)
        except KafkaException as exc:
            log.info("consumer.drain_skipped", cluster=plan.source.name, error=str(exc))
            return
        finally:
            probe.close()  # never subscribed: nothing to leave
        self._source_answered = bool(ends)
        if not ends:
            return
        left: dict[Slot, int] = dict(ends)
        read: dict[Slot, int] = {}

        def drained() -> bool:
            nonlocal left, read
            with s.lock:
                positions = self._fetcher.positions(assignment)
            read = {slot: max(positions.get(slot, -1), start.get(slot, -1)) for slot in ends}
            left = {slot: end for slot, end in ends.items() if read[slot] < end}
            return not left

        # The application reads meanwhile: nothing to wait on but its progress.
        if not wait_until(drained, timeout, first=0.02, most=0.02):
            link = plan.links.get((plan.destination.name, plan.source.name))
            only_here = copies_only_here(left, logical, plan.destination, link)
            if only_here:
                self._read_copies(
                    plan, drained, lambda: {slot: read[slot] for slot in only_here & left.keys()}, timeout
                )
        if not left:
            log.info("consumer.drained", cluster=plan.source.name, partitions=len(ends))
        elif timeout > 0:  # else no drain was asked for
            log.warning("consumer.drain_incomplete", cluster=plan.source.name, partitions=len(left),
                        timeout_ms=round(timeout * 1000))  # fmt: skip

    def _read_copies(
        self, plan: SwitchPlan, drained: Callable[[], bool], positions: Callable[[], dict[Slot, int]], timeout: float
    ) -> None:
        """Go on draining while the copies only here are not read to their end and the
        application's position in them moves (see ``_COPIES_STALL_S``)."""
        stall = max(timeout, _COPIES_STALL_S)
        log.info("consumer.drain_copies", cluster=plan.source.name, partitions=len(positions()))
        while True:
            before = positions()
            if not before:
                return
            if not wait_until(functools.partial(_moved, drained, positions, before), stall, first=0.02, most=0.05):
                log.error(
                    "consumer.drain_copies_stalled",
                    cluster=plan.source.name,
                    partitions=len(before),
                    stalled_s=round(stall),
                )
                return

    @staticmethod
    def _start_positions(probe: RawConsumer, assignment: list[TopicPartition]) -> dict[Slot, int]:
        """Where reading starts for partitions nothing was read from yet: committed or low mark."""
        try:
            committed = probe.committed(assignment, timeout=_ASK_TIMEOUT_S)
        except KafkaException:
            return {}
        out = {}
        for tp in committed:
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
            else:
                out[(tp.topic, tp.partition)] = probe.get_watermark_offsets(tp, timeout=_ASK_TIMEOUT_S)[0]
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


def _moved(drained: Callable[[], bool], positions: Callable[[], dict[Slot, int]], before: dict[Slot, int]) -> bool:
    """Drained, or the positions moved since ``before``."""
    return drained() or positions() != before
