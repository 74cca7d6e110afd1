"""Partitions and positions the application sets itself on a Kafka ``Consumer``: ``assign``,
``incremental_assign``, ``unassign``, ``incremental_unassign`` and ``seek``.

* The application names logical partitions (``orders``/0) or physical ones (``kafka-b.orders``/0);
  ``named_partitions`` says which physical partitions of the cluster in use that means and
  where each starts.
* Called in the application's ``on_assign``, ``assign`` sets what the group assigned (and
  where it starts), as in confluent-kafka. Called outside, it is a *manual assignment*: the
  consumer reads those partitions, without group rebalances, on every cluster it moves to.
* A manually assigned partition's ledger is claimed as a group member's is: the claim's
  generation fences the previous owner's writes; a partition is read only once claimed.
* On a switch a manual assignment moves with the consumer: every physical partition behind its
  logical partitions on the new cluster starts at its translated position (``start_positions``:
  committed, MM2 checkpoints and offset syncs, timestamps) — never after the first record the
  group has not acknowledged. An offset set on the old cluster names a record there only, so
  it is not carried over as a number: a commit after a seek forward covers the records
  skipped (as in Kafka), and the translation starts after them; records skipped by a seek
  forward that no commit covered yet are read on the new cluster.
* ``seek`` sets the next record of an assigned partition. The records it goes back over that
  were handed out and not acknowledged are handed out again; those the group acknowledged
  (on any cluster) are not — the ack ledger filters them, as everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import OFFSET_END, TopicPartition

from hotstandby.adapters.kafka.consumer.fetch import Fetcher
from hotstandby.adapters.kafka.consumer.named_partitions import (
    SPECIAL_OFFSETS,
    PhysicalAssignment,
    named_slot,
    physical_assignment,
)
from hotstandby.adapters.kafka.consumer.rebalance import Assignments
from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot
from hotstandby.adapters.kafka.consumer.topic_map import copy_prefixes
from hotstandby.configcenter.documents import Link

__all__ = ["ManualAssignment"]


class ManualAssignment:
    """The position-setting methods of one consumer (see the module doc)."""

    def __init__(self, state: ConsumerState, fetcher: Fetcher, assignments: Assignments) -> None:
        self._s = state
        self._fetcher = fetcher
        self._assignments = assignments

    def _physical(self, partitions: Sequence[TopicPartition], links: dict[tuple[str, str], Link]) -> PhysicalAssignment:
        s = self._s
        return physical_assignment(s, partitions, copy_prefixes(s.follower.route.clusters, s.spec.name, links))

    def assign(self, partitions: Sequence[TopicPartition], links: dict[tuple[str, str], Link], *,
               incremental: bool) -> None:  # fmt: skip
        s = self._s
        wanted = self._physical(partitions, links)
        if self._assignments.request(wanted):
            return  # in on_assign: applied when it returns
        s.logical.update(wanted.names)
        keys = wanted.logical_keys()
        if incremental:
            s.manual |= keys
        else:
            assigned = {(tp.topic, tp.partition) for tp in s.inner.assignment()}
            self._assignments.let_go(assigned - set(wanted.offsets))
            s.manual = set(keys)
        s.ledgers.claim(keys)
        self._assignments.apply(wanted.partitions(), assign=True, incremental=incremental)

    def unassign(self) -> None:
        s = self._s
        self._assignments.let_go({(tp.topic, tp.partition) for tp in s.inner.assignment()})
        s.manual = set()
        s.inner.unassign()

    def incremental_unassign(self, partitions: Sequence[TopicPartition], links: dict[tuple[str, str], Link]) -> None:
        s = self._s
        named = {(tp.topic, tp.partition) for tp in partitions}
        assigned = {(tp.topic, tp.partition) for tp in s.inner.assignment()}
        # The partitions named, and the copies behind them that are assigned.
        gone = {slot for slot in self._physical(partitions, links).offsets if slot in named or slot in assigned}
        self._assignments.let_go(gone & assigned)
        s.manual -= {(s.logical_of(t), p) for t, p in gone}
        s.inner.incremental_unassign([TopicPartition(t, p) for t, p in sorted(gone)])

    def reassign(self, links: dict[tuple[str, str], Link]) -> None:
        """A switch: the manual assignment on the new cluster, each partition at its
        translated position."""
        s = self._s
        s.logical = {}  # the old cluster's copies have other names
        wanted = self._physical([TopicPartition(t, p) for t, p in sorted(s.manual)], links)
        s.logical.update(wanted.names)
        s.ledgers.claim(wanted.logical_keys())
        partitions = wanted.partitions()
        self._assignments.place(partitions)
        self._assignments.apply(partitions, assign=True)

    def seek(self, partition: TopicPartition) -> None:
        """Set where reading goes on: every assigned physical partition behind a logical name for
        a special offset, the one an explicit offset names (``named_partitions``)."""
        s = self._s
        topic, number, offset = partition.topic, partition.partition, partition.offset
        if offset in SPECIAL_OFFSETS and s.logical_of(topic) == topic:
            assigned = {(tp.topic, tp.partition) for tp in s.inner.assignment()}
            slots = [(p, number) for p, name in list(s.logical.items()) if name == topic and (p, number) in assigned]
            slots = slots or [(topic, number)]  # nothing assigned: as confluent-kafka, an error
        else:
            slots = [named_slot(s, topic, number, offset)]
        for slot in slots:
            s.inner.seek(TopicPartition(slot[0], slot[1], offset))
            self._went_back(slot, offset)

    def _went_back(self, slot: Slot, offset: int) -> None:
        """After a seek of ``slot`` to ``offset``: what was fetched is dropped, what was handed
        out from there on and not acknowledged is handed out again."""
        if offset == OFFSET_END:
            return  # nothing handed out is read again
        start = offset if offset >= 0 else 0  # the beginning, or the stored offset: all of it may come again
        self._fetcher.discard({slot}, start)
        self._s.acks.rewind(slot, start)
