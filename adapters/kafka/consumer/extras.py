"""The part of confluent-kafka's Consumer surface about the cluster in use, the pausing of
partitions, and the partitions and positions the application sets (docs/kafka-api.md).

* Metadata, group membership, watermarks and timestamps (``list_topics``, ``cluster_id``,
  ``memberid``, ``consumer_group_metadata``, ``get_watermark_offsets``, ``offsets_for_times``)
  answer for the cluster in use, topics named as they are there (a remote copy as
  ``kafka-b.orders``); after a switch they answer for the new cluster.
* ``position`` answers, like ``committed``, per physical partition of the cluster in use: its
  offsets name records of that cluster only.
* ``pause``/``resume`` take logical partitions; a paused partition stays paused across
  rebalances and switches until resumed.
* ``assign``, ``unassign``, ``incremental_assign``, ``incremental_unassign`` and ``seek`` set
  partitions and positions (``consumer_assign``), named as ``named_partitions`` says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import TopicPartition

from hotstandby.adapters.kafka.consumer.assign import ManualAssignment
from hotstandby.adapters.kafka.consumer.fetch import Fetcher
from hotstandby.adapters.kafka.consumer.rebalance import Assignments
from hotstandby.adapters.kafka.consumer.state import ConsumerState
from hotstandby.adapters.kafka.surface import HANDLE_CLOSED, Closable, partition_list, topic_partition
from hotstandby.configcenter.documents import Link

__all__ = ["ConsumerExtras"]

T = TypeVar("T")


class ConsumerExtras(Closable):
    """Methods of :class:`hotstandby.adapters.kafka.Consumer` (see the module doc)."""

    _closed_message = "Consumer closed"
    _state: ConsumerState
    _fetcher: Fetcher
    _assignments: Assignments
    _manual: ManualAssignment

    def _on_current(self, call: Callable[[Any], T], *, closed: str | None = None) -> T:
        """``call(raw consumer in use)`` without holding the consumer's lock (it may wait on the
        network); again on the new one if a switch replaced and closed it meanwhile."""
        self._check_open(closed)
        s = self._state
        inner = s.inner
        try:
            return call(inner)
        except RuntimeError:
            if s.inner is inner or self._closed:
                raise
            return call(s.inner)

    # -- the cluster in use ---------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """The metadata (``ClusterMetadata``) of the cluster in use."""
        return self._on_current(lambda c: c.list_topics(topic=topic, timeout=timeout), closed=HANDLE_CLOSED)

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The id of the cluster in use."""
        cluster: str | None = self._on_current(lambda c: c.cluster_id(timeout=timeout), closed=HANDLE_CLOSED)
        return cluster

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New SASL credentials for the cluster in use and every cluster the consumer moves to."""
        self._check_open(HANDLE_CLOSED)
        with self._state.lock:
            self._state.set_sasl_credentials(username, password)

    def memberid(self) -> str | None:
        """The consumer's member id in its group on the cluster in use."""
        self._check_open()
        with self._state.lock:
            member: str | None = self._state.inner.memberid()
            return member

    def consumer_group_metadata(self) -> Any:
        """The group metadata of the cluster in use (opaque, as confluent-kafka's)."""
        self._check_open()
        with self._state.lock:
            return self._state.inner.consumer_group_metadata()

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int] | None:
        """Low and high offsets of a partition of the cluster in use (topic named as there)."""
        kwargs: dict[str, Any] = {"cached": cached} if timeout is None else {"timeout": timeout, "cached": cached}
        marks: tuple[int, int] | None = self._on_current(lambda c: c.get_watermark_offsets(partition, **kwargs))
        return marks

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """Offsets by timestamp on the cluster in use (topics named as there)."""
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        found: list[TopicPartition] = self._on_current(lambda c: c.offsets_for_times(partitions, **kwargs))
        return found

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next record the application gets, per physical partition of the
        cluster in use behind the given logical ones (as :meth:`committed`)."""
        self._check_open()
        s = self._state
        with s.lock:
            physical = self._physical(partitions)
            positions = self._fetcher.positions(physical)
            return [TopicPartition(tp.topic, tp.partition, positions.get((tp.topic, tp.partition), -1001))
                    for tp in physical]  # fmt: skip

    def _physical(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The assigned physical partitions behind logical ones (the topic itself if none is)."""
        s = self._state
        wanted = {(tp.topic, tp.partition) for tp in partitions}
        found = [tp for tp in s.inner.assignment() if (s.logical_of(tp.topic), tp.partition) in wanted]
        seen = {(s.logical_of(tp.topic), tp.partition) for tp in found}
        return found + [TopicPartition(t, p) for t, p in sorted(wanted - seen)]

    # -- pausing --------------------------------------------------------------------------

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop handing out records of these logical partitions until :meth:`resume`, on the
        cluster in use and on every cluster a switch moves to."""
        self._check_open()
        s = self._state
        with s.lock:
            s.paused |= {(tp.topic, tp.partition) for tp in partitions}
            assigned = self._assignments.paused_of(s.inner.assignment())
            if assigned:
                s.inner.pause(assigned)

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Hand out records of these logical partitions again (those the SDK itself holds —
        ledger not claimed yet, peers still draining — follow when it releases them)."""
        self._check_open()
        s = self._state
        with s.lock:
            wanted = {(tp.topic, tp.partition) for tp in partitions}
            s.paused -= wanted
            assigned = [tp for tp in s.inner.assignment() if (s.logical_of(tp.topic), tp.partition) in wanted]
            readable = self._assignments.readable(assigned)
            if readable:
                s.inner.resume(readable)

    # -- partitions and positions set by the application -----------------------------------

    def _links(self) -> dict[tuple[str, str], Link]:
        follower = self._state.follower
        links: dict[tuple[str, str], Link] = follower.patiently(follower.center.links, "reading the links")
        return links

    def assign(self, partitions: list[TopicPartition]) -> None:
        """In ``on_assign``: the partitions (logical or physical) and where they start, as
        confluent-kafka's. Elsewhere: read these partitions, without a group rebalance, on
        every cluster the consumer moves to (docs/kafka-api.md)."""
        self._check_open()
        wanted = partition_list(partitions)
        links = self._links()
        with self._state.lock:
            self._manual.assign(wanted, links, incremental=False)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """As :meth:`assign`, adding to what is assigned."""
        self._check_open()
        wanted = partition_list(partitions)
        links = self._links()
        with self._state.lock:
            self._manual.assign(wanted, links, incremental=True)

    def unassign(self) -> None:
        """Stop reading every partition assigned (on this cluster and the next ones)."""
        self._check_open()
        with self._state.lock:
            self._manual.unassign()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Stop reading these partitions (logical ones with their copies)."""
        self._check_open()
        gone = partition_list(partitions)
        links = self._links()
        with self._state.lock:
            self._manual.incremental_unassign(gone, links)

    def seek(self, partition: TopicPartition) -> None:
        """Read an assigned partition from ``partition.offset`` on; records the group
        acknowledged are not handed out again (docs/kafka-api.md)."""
        self._check_open()
        topic_partition(partition)
        with self._state.lock:
            self._manual.seek(partition)
