"""MM2's checkpoint and heartbeat tasks for one flow.

Checkpoints are computed as MirrorCheckpointTask does: the offset syncs are read back from
their topic into an :class:`OffsetSyncStore` (nothing is translated before that topic was read
to its end once), consumer groups and their committed offsets are listed on the source, and
:class:`CheckpointTracker` decides what to write to ``<source>.checkpoints.internal`` on the
target. Checkpoints already in that topic are read at start so they stay monotonic across
restarts.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.mm2.checkpoints import CheckpointTracker
from hotstandby.adapters.kafka.mm2.codec import Checkpoint, Heartbeat, OffsetSync
from hotstandby.adapters.kafka.mm2.read_partition import read_to_end
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncStore
from hotstandby.errors import FormatError
from hotstandby.logs import get_logger
from hotstandby.refcluster.flow_status import FlowStatus
from hotstandby.refcluster.replicators.kafka.config import FlowConfig
from hotstandby.refcluster.replicators.kafka.kafka_io import ReplicationError, close_consumer, coordinates, flush

__all__ = ["CheckpointTask", "HeartbeatTask"]

log = get_logger("hotstandby.replicator")
_TIMEOUT = 10.0
_GROUP_RETRY_S = 60.0  # a group whose offsets the broker did not give is skipped this long
_CHECKPOINT_FLUSH_S = 2.0  # checkpoints are emitted again at the next interval


class CheckpointTask:
    def __init__(
        self, config: FlowConfig, source_admin: AdminClient, target_producer: Producer, status: FlowStatus
    ) -> None:
        self.config = config
        self.policy = config.replication_policy
        self.syncs_topic = self.policy.offset_syncs_topic(
            config.target.alias if config.offset_syncs_location == "source" else config.source.alias
        )
        self.checkpoints_topic = self.policy.checkpoints_topic(config.source.alias)
        self.store = OffsetSyncStore()
        self.tracker = CheckpointTracker(self.policy, config.source.alias, config.target.alias, config.topic_filter)
        self._admin = source_admin
        self.producer = target_producer
        self._status = status
        syncs_side = config.source if config.offset_syncs_location == "source" else config.target
        self._syncs_consumer_config: dict[str, Any] = {
            **syncs_side.consumer,
            "bootstrap.servers": syncs_side.bootstrap,
            "group.id": f"__hs-replicator-syncs-{config.name}",
            "enable.auto.commit": False,
            # If the syncs topic starts again (its cluster came back empty), read it from the
            # start rather than jumping past every new sync.
            "auto.offset.reset": "earliest",
        }
        self._group_retry_at: dict[str, float] = {}
        self._syncs_consumer: Consumer | None = None
        self.stop = threading.Event()  # the flow's; set on shutdown
        self._groups: list[str] = []
        self._groups_listed_at = 0.0

    def start(self) -> None:
        """Read back earlier checkpoints and every offset sync, then start tailing the syncs."""
        self.close()  # a retried start must not leak the previous consumer
        self.store = OffsetSyncStore()
        target = {
            **self.config.target.consumer,
            "bootstrap.servers": self.config.target.bootstrap,
            "group.id": "__hs-read",
        }
        for msg in read_to_end(target, self.checkpoints_topic):
            try:
                self.tracker.remember([Checkpoint.decode(msg.key() or b"", msg.value() or b"")])
            except FormatError as exc:
                log.warning(
                    "replicator.bad_checkpoint", topic=self.checkpoints_topic, offset=msg.offset(), error=str(exc)
                )
        syncs = read_to_end(self._syncs_consumer_config, self.syncs_topic)
        for msg in syncs:
            self._add_sync(msg)
        self.store.mark_read_to_end()
        self._syncs_consumer = Consumer(self._syncs_consumer_config)
        next_offset = coordinates(syncs[-1])[2] + 1 if syncs else OFFSET_BEGINNING
        self._syncs_consumer.assign([TopicPartition(self.syncs_topic, 0, next_offset)])

    def _add_sync(self, msg: Message) -> None:
        try:
            self.store.add(OffsetSync.decode(msg.key() or b"", msg.value() or b""))
        except FormatError as exc:
            log.warning("replicator.bad_offset_sync", topic=self.syncs_topic, offset=msg.offset(), error=str(exc))

    def _tail_syncs(self) -> None:
        if self._syncs_consumer is None:  # a restart of the task failed half-way: try again
            self.start()
        assert self._syncs_consumer is not None
        while True:
            batch = self._syncs_consumer.consume(num_messages=1000, timeout=0.05)
            if not batch:
                break
            for msg in batch:
                if msg.error() is None:
                    self._add_sync(msg)
        if self._syncs_restarted():
            # Its cluster came back empty (the reference broker does not report an offset out
            # of range there): the syncs we hold describe a topic that is gone; read anew.
            log.info("replicator.syncs_restarted", topic=self.syncs_topic)
            self.start()

    def _syncs_restarted(self) -> bool:
        """The syncs topic now ends before the position we read it from."""
        assert self._syncs_consumer is not None
        tp = TopicPartition(self.syncs_topic, 0)
        try:
            (position,) = self._syncs_consumer.position([tp])
            _, high = self._syncs_consumer.get_watermark_offsets(tp, timeout=2.0, cached=False)
        except KafkaException:
            return False
        return position.offset >= 0 and high < position.offset

    def _list_groups(self) -> list[str]:
        if (
            time.monotonic() - self._groups_listed_at >= self.config.intervals.refresh_groups
            or not self._groups_listed_at
        ):
            try:
                listed = self._admin.list_consumer_groups(request_timeout=_TIMEOUT).result(_TIMEOUT)
            except TimeoutError:
                raise ReplicationError(f"listing consumer groups: no answer within {_TIMEOUT} s") from None
            self._groups = sorted(g.group_id for g in listed.valid if self.config.group_filter.matches(g.group_id))
            self._groups_listed_at = time.monotonic()
        return self._groups

    def emit(self) -> int:
        """One round of checkpoints; returns how many were written."""
        self._tail_syncs()
        written: list[Checkpoint] = []
        # All groups at once: a group the broker does not answer for (Tansu leaves some stuck)
        # must not hold back every other group's checkpoints by a timeout each.
        now = time.monotonic()
        futures = {
            group: self._admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=_TIMEOUT
            )[group]
            for group in self._list_groups()
            if self._group_retry_at.get(group, 0.0) <= now
        }
        deadline = time.monotonic() + _TIMEOUT + 1.0  # after the requests' own timeout
        for group, future in futures.items():
            try:
                result = future.result(max(deadline - time.monotonic(), 0.1))
            except (KafkaException, TimeoutError) as exc:
                # Asked again later, not every round: each unanswered request costs a timeout.
                self._group_retry_at[group] = time.monotonic() + _GROUP_RETRY_S
                log.warning("replicator.group_offsets_failed", group=group, error=str(exc) or "timed out",
                            retry_in_s=_GROUP_RETRY_S)  # fmt: skip
                continue
            offsets = {(tp.topic, tp.partition): (tp.offset, tp.metadata or "") for tp in result.topic_partitions}
            for cp in self.tracker.checkpoints_for_group(group, offsets, self.store):
                self.producer.produce(self.checkpoints_topic, key=cp.key(), value=cp.value(), partition=0)
                written.append(cp)
        if written:
            if flush(self.producer, _CHECKPOINT_FLUSH_S, self.stop) > 0:
                raise ReplicationError(f"checkpoints to {self.checkpoints_topic} not acknowledged")
            self.tracker.remember(written)
            last = written[-1]
            self._status.checkpoints_emitted += len(written)
            self._status.last_checkpoint = {
                "group": last.group, "topic": last.topic, "partition": last.partition,
                "upstream_offset": last.upstream_offset, "downstream_offset": last.downstream_offset, "at": time.time(),
            }  # fmt: skip
            log.info("replicator.checkpoints", flow=self.config.name, count=len(written))
        return len(written)

    def close(self) -> None:
        if self._syncs_consumer is not None:
            close_consumer(self._syncs_consumer, f"__hs-replicator-syncs-{self.config.name}")
            self._syncs_consumer = None


class HeartbeatTask:
    """MirrorHeartbeatTask: ``Heartbeat(source, target, now)`` to ``heartbeats`` on the target."""

    def __init__(self, config: FlowConfig, target_producer: Producer, status: FlowStatus) -> None:
        self._config = config
        self.producer = target_producer
        self._status = status
        self.topic = config.replication_policy.heartbeats_topic
        self.stop = threading.Event()  # the flow's; set on shutdown

    def emit(self) -> None:
        hb = Heartbeat(self._config.source.alias, self._config.target.alias, int(time.time() * 1000))

        def delivered(err: Any, _msg: Message) -> None:
            if err is None:
                self._status.heartbeats_emitted += 1
            else:
                log.warning("replicator.heartbeat_failed", flow=self._config.name, error=str(err))

        # Not waited for: a heartbeat that does not arrive is reported, never retried.
        self.producer.produce(self.topic, key=hb.key(), value=hb.value(), partition=0, on_delivery=delivered)
        self.producer.poll(0)
