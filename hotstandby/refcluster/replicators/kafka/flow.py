"""One replication flow: copy records source -> target as MM2's MirrorSourceTask does.

Each round reads a batch from the source, writes it to the remote topics (same partition,
key, value, headers, timestamp; one request in flight, so order holds), waits until the target
acknowledged all of it, then records the progress and queues offset syncs. Any failure
rewinds the consumer to the last recorded progress and retries after a backoff: records may
be written twice (at-least-once, as MM2), never skipped.

With the ``identity`` policy a copy keeps its topic name, so every copy carries the header
``hs-replicated-from: <source alias>`` and a flow never copies a record that has it; that
stops A -> B -> A loops between two clusters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.mm2.codec import OffsetSync
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncEmitter
from hotstandby.logs import get_logger
from hotstandby.refcluster.flow_status import FlowStatus
from hotstandby.refcluster.replicators.kafka.config import FlowConfig
from hotstandby.refcluster.replicators.kafka.every import Every
from hotstandby.refcluster.replicators.kafka.kafka_io import (
    ReplicationError,
    close_consumer,
    coordinates,
    ensure_topics,
    flush,
)
from hotstandby.refcluster.replicators.kafka.mm2_tasks import CheckpointTask, HeartbeatTask
from hotstandby.refcluster.replicators.kafka.progress_log import TP, ProgressLog
from hotstandby.refcluster.replicators.kafka.topic_ids import TopicIds

__all__ = ["MARKER_HEADER", "KafkaFlow"]

log = get_logger("hotstandby.replicator")

MARKER_HEADER = "hs-replicated-from"
_BATCH = 500
_TIMEOUT = 10.0
_FLUSH_TIMEOUT = 10.0
_STATUS_EVERY = 1.0
_MAX_BACKOFF = 5.0


class KafkaFlow:
    def __init__(self, config: FlowConfig) -> None:
        self.config = config
        self.policy = config.replication_policy
        src, dst = config.source, config.target
        self.status = FlowStatus(flow=config.name, system="kafka", policy=config.policy)
        self.status.intervals_overridden = config.overridden_intervals()
        self._source_admin = AdminClient({**src.admin, "bootstrap.servers": src.bootstrap})
        self._target_admin = AdminClient({**dst.admin, "bootstrap.servers": dst.bootstrap})
        # One request in flight keeps each partition in order across retries, without the
        # producer-id state of an idempotent producer, which a broker that restarted empty
        # rejects (Tansu: UnknownProducerId, then PRODUCER_FENCED). Retried writes may
        # duplicate records: at-least-once, like MM2. The delivery timeout is short so a
        # failed batch is retried from the progress soon.
        self._producer_base = {
            "acks": "all",
            "linger.ms": 5,
            "max.in.flight.requests.per.connection": 1,
            "message.timeout.ms": 5_000,
        }
        self._target = self._new_target_producer()
        self._syncs_producer = self._new_syncs_producer()
        self._aux_retry_at: dict[str, float] = {}
        self._failed_syncs: list[OffsetSync] = []
        self._consumer_config: dict[str, Any] = {
            **src.consumer,
            "bootstrap.servers": src.bootstrap,
            "group.id": f"__hs-replicator-{config.name}",  # never committed; '__' keeps it out of checkpoints
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        self._consumer = Consumer(self._consumer_config)
        self.emitter = OffsetSyncEmitter(config.offset_lag_max)
        self.checkpoints = CheckpointTask(config, self._source_admin, self._target, self.status)
        self.heartbeats = HeartbeatTask(config, self._target, self.status)
        self._topic_ids = TopicIds(self._source_admin, _TIMEOUT)  # to notice a re-created topic
        self.partitions: dict[str, int] = {}  # replicated source topic -> partition count
        self._caught_up_at = time.time()
        self._backoff = 0.0
        self._stop = threading.Event()
        self._log = ProgressLog(config, self._stop)
        self.progress = self._log.positions  # last upstream offset handled and acknowledged

    def _new_target_producer(self) -> Producer:
        dst = self.config.target
        return Producer({**self._producer_base, **dst.producer, "bootstrap.servers": dst.bootstrap})

    def _new_syncs_producer(self) -> Producer:
        if self.config.offset_syncs_location == "target":
            return self._target
        src = self.config.source
        return Producer({**self._producer_base, **src.producer, "bootstrap.servers": src.bootstrap})

    def _aux(self, name: str, task: Callable[[], object]) -> None:
        """Run a side task (offset syncs, heartbeats, checkpoints). Its failure is logged and
        retried after a backoff, without disturbing record copying."""
        if time.monotonic() < self._aux_retry_at.get(name, 0.0):
            return
        try:
            task()
            self._aux_retry_at.pop(name, None)
        except (ReplicationError, KafkaException, TimeoutError) as exc:
            log.warning("replicator.task_failed", flow=self.config.name, task=name, error=str(exc) or repr(exc))
            self.status.error(f"{name}: {exc}")
            self._aux_retry_at[name] = time.monotonic() + 1.0

    # -- start ----------------------------------------------------------------------------

    def _internal_topics(self) -> None:
        target_topics = {self.config.progress_topic: 1, self.checkpoints.checkpoints_topic: 1, self.heartbeats.topic: 1}
        if self.config.offset_syncs_location == "target":
            target_topics[self.checkpoints.syncs_topic] = 1
        else:
            ensure_topics(
                self._source_admin, {self.checkpoints.syncs_topic: 1}, compacted=[self.checkpoints.syncs_topic]
            )
        ensure_topics(
            self._target_admin, target_topics, compacted=[t for t in target_topics if t != self.heartbeats.topic]
        )

    def start(self) -> None:
        self._internal_topics()
        self._log.load()
        for topic, partitions in self._log.past_the_end(self._consumer_config).items():
            log.warning("replicator.progress_past_source_end", flow=self.config.name, topic=topic)
            self._forget_progress(topic, partitions)
        self.checkpoints.start()
        self._refresh_topics()
        self.status.state = "running"
        log.info("replicator.started", flow=self.config.name, resumed_partitions=len(self.progress))

    # -- copying --------------------------------------------------------------------------

    def _position(self, tp: TP) -> TopicPartition:
        done = self.progress.get(tp)
        return TopicPartition(tp[0], tp[1], OFFSET_BEGINNING if done is None else done + 1)

    def _refresh_topics(self) -> None:
        metadata = self._source_admin.list_topics(timeout=_TIMEOUT)
        wanted = {
            name: len(md.partitions)
            for name, md in metadata.topics.items()
            if md.error is None
            and self.policy.should_replicate(name, self.config.target.alias, self.config.topic_filter)
        }
        gone = [t for t in self.partitions if t not in wanted]
        recreated = self._topic_ids.recreated(list(wanted))
        for t in recreated:
            # Deleted and created again, or the source came back empty and the topic was
            # provisioned again: offsets count from zero, the progress names other records.
            log.warning("replicator.source_topic_recreated", flow=self.config.name, topic=t)
            self._forget_progress(t, wanted[t])
        if gone or recreated:
            # Deleted on the source, or the source came back empty. A client that knew the old
            # broker state does not recover on Tansu, so start a fresh one for what remains.
            for t in gone + recreated:
                self.partitions.pop(t, None)
            # Not close(): it can hang for good here (kafka_io.close_consumer).
            close_consumer(self._consumer, self._consumer_config["group.id"])
            self._consumer = Consumer(self._consumer_config)
            self._consumer.assign([self._position((t, p)) for t, n in self.partitions.items() for p in range(n)])
            log.info("replicator.topics_gone", flow=self.config.name, topics=gone)
        remote = {self.policy.format_remote_topic(self.config.source.alias, t): n for t, n in wanted.items()}
        ensure_topics(self._target_admin, remote)
        new = [self._position((t, p)) for t, n in wanted.items() for p in range(n) if p >= self.partitions.get(t, 0)]
        self.partitions.update(wanted)
        self.status.topics_refreshed_at = time.time()
        if new:
            self._consumer.incremental_assign(new)
            log.info("replicator.assigned", flow=self.config.name, partitions=[(tp.topic, tp.partition) for tp in new])

    def _forget_progress(self, topic: str, partitions: int) -> None:
        """Start ``topic`` over: its positions and sync state dropped."""
        for p in range(partitions):
            self.emitter.forget(topic, p)
        self._log.forget(self._target, topic, partitions)

    def _rewind(self) -> None:
        """Back to the last acknowledged progress of every partition (after a failure), with a
        fresh target producer."""
        self._target.purge()
        self._target.flush(0)
        shared = self._syncs_producer is self._target
        self._target = self._new_target_producer()
        self.checkpoints.producer = self.heartbeats.producer = self._target
        if shared:
            self._syncs_producer = self._target
        self._consumer.assign([self._position((t, p)) for t, n in self.partitions.items() for p in range(n)])

    def _copy(self, batch: list[Message]) -> None:
        delivered: list[tuple[TP, int, int]] = []
        failures: list[str] = []
        handled: dict[TP, int] = {}
        identity = self.config.policy == "identity"

        def on_delivery(tp: TP, upstream: int) -> Callable[[Any, Message], None]:
            def callback(err: Any, msg: Message) -> None:
                downstream = msg.offset()
                if err is not None or downstream is None:
                    failures.append(f"{tp[0]}[{tp[1]}]@{upstream}: {err}")
                else:
                    delivered.append((tp, upstream, downstream))

            return callback

        skipped = 0
        for msg in batch:
            err = msg.error()
            if err is not None:
                # Read-side errors are the client's to retry (or a topic that vanished, dropped at
                # the next refresh); only a failed write fails the batch.
                if err.code() != KafkaError._PARTITION_EOF:
                    log.warning("replicator.consume_error", flow=self.config.name, topic=msg.topic(), error=str(err))
                    self.status.error(f"consume {msg.topic()}: {err}")
                continue
            topic, partition, upstream = coordinates(msg)
            tp = (topic, partition)
            headers = list(msg.headers() or [])
            handled[tp] = upstream
            if identity and any(k == MARKER_HEADER for k, _ in headers):
                skipped += 1  # a copy from elsewhere: never sent back
                continue
            if identity:
                headers.append((MARKER_HEADER, self.config.source.alias.encode()))
            ts_type, ts = msg.timestamp()
            self._produce(
                self.policy.format_remote_topic(self.config.source.alias, tp[0]),
                key=msg.key(), value=msg.value(), headers=headers, partition=tp[1],
                timestamp=ts if ts_type != 0 else 0, on_delivery=on_delivery(tp, upstream),
            )  # fmt: skip
        if flush(self._target, _FLUSH_TIMEOUT, self._stop) > 0 or failures:
            raise ReplicationError(f"target did not acknowledge the batch: {failures[:3] or 'flush timed out'}")
        for tp, upstream, downstream in sorted(delivered, key=lambda d: (d[0], d[1])):
            self.emitter.record_written(tp[0], tp[1], upstream, downstream)
        self._log.commit(self._target, handled)
        self.status.records_copied += len(delivered)
        self.status.records_skipped += skipped
        for (topic, _), _, _ in delivered:
            entry = self.status.topics.setdefault(topic, {"copied": 0})
            entry["copied"] += 1

    def _produce(self, topic: str, **kwargs: Any) -> None:
        deadline = time.monotonic() + _FLUSH_TIMEOUT
        while True:
            try:
                self._target.produce(topic, **kwargs)
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise ReplicationError("target producer queue stayed full") from None
                self._target.poll(0.05)

    def _send_offset_syncs(self) -> None:
        """Write due syncs without waiting (MM2 does too); failed ones are queued again."""
        if self._failed_syncs:
            failed, self._failed_syncs = self._failed_syncs, []
            self.emitter.requeue(failed)
            if self._syncs_producer is not self._target:
                self._syncs_producer = self._new_syncs_producer()  # a fresh client after failures
            raise ReplicationError(f"{len(failed)} offset syncs were not acknowledged; sending them again")
        for sync in self.emitter.take_pending():

            def delivered(err: Any, _msg: Message, sync: OffsetSync = sync) -> None:
                if err is None:
                    self.status.offset_syncs_emitted += 1
                    self.status.last_offset_sync = {
                        "topic": sync.topic, "partition": sync.partition, "upstream_offset": sync.upstream_offset,
                        "downstream_offset": sync.downstream_offset, "at": time.time(),
                    }  # fmt: skip
                    return
                self._failed_syncs.append(sync)

            self._syncs_producer.produce(
                self.checkpoints.syncs_topic, key=sync.key(), value=sync.value(), partition=0, on_delivery=delivered
            )
        self._syncs_producer.poll(0)

    # -- status ---------------------------------------------------------------------------

    def _update_status(self) -> None:
        lag = 0
        for topic, n in self.partitions.items():
            topic_lag = 0
            for p in range(n):
                # Cached from fetch responses: asking the broker would wait behind the long-poll fetch.
                _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True) or (0, 0)
                if high >= 0:
                    topic_lag += max(high - (self.progress.get((topic, p), -1) + 1), 0)
            entry = self.status.topics.setdefault(topic, {"copied": 0})
            entry.update(
                remote=self.policy.format_remote_topic(self.config.source.alias, topic), partitions=n, lag=topic_lag
            )
            lag += topic_lag
        now = time.time()
        if lag == 0:
            self._caught_up_at = now
        self.status.lag_records = lag
        self.status.lag_seconds = round(now - self._caught_up_at, 3)
        self.status.write(self.config.status_path)

    # -- the loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Replicate until ``stop`` is set; every failure is logged, reported and retried."""
        self._stop = stop
        self.checkpoints.stop = self.heartbeats.stop = stop
        intervals = self.config.intervals
        refresh, flush = Every(intervals.refresh_topics), Every(intervals.offset_flush)
        heartbeat, checkpoint = Every(intervals.emit_heartbeats), Every(intervals.emit_checkpoints)
        report = Every(_STATUS_EVERY)
        started = False
        while not stop.is_set():
            try:
                if not started:
                    self.start()
                    started = True
                    refresh.due()
                if refresh.due():
                    self._refresh_topics()
                batch = self._consumer.consume(num_messages=_BATCH, timeout=0.02)
                if batch:
                    self._copy(batch)
                if flush.due():
                    self.emitter.promote_delayed()
                self._aux("offset_syncs", self._send_offset_syncs)
                if heartbeat.due():
                    self._aux("heartbeats", self.heartbeats.emit)
                if checkpoint.due():
                    self._aux("checkpoints", self.checkpoints.emit)
                if report.due():
                    self._update_status()
                self._backoff = 0.0
            except (ReplicationError, KafkaException, TimeoutError) as exc:
                self._failed(exc, started, stop)
            except Exception as exc:  # a replicator must not die: report, then retry like any failure
                log.exception("replicator.unexpected_error", flow=self.config.name, error=repr(exc))
                self._failed(exc, started, stop)
        self.close()

    def _failed(self, exc: Exception, started: bool, stop: threading.Event) -> None:
        self._backoff = min(max(self._backoff * 2, 0.2), _MAX_BACKOFF)
        log.warning("replicator.failed", flow=self.config.name, error=str(exc), retry_in_s=self._backoff)
        self.status.error(str(exc))
        self.status.state = "retrying" if started else "starting"
        self.status.write(self.config.status_path)
        if started:
            try:
                self._rewind()
            except KafkaException as again:
                log.warning("replicator.rewind_failed", flow=self.config.name, error=str(again))
        stop.wait(self._backoff)
        if started:
            self.status.state = "running"

    def close(self) -> None:
        self.status.state = "stopped"
        self.status.write(self.config.status_path)
        self.checkpoints.close()
        close_consumer(self._consumer, self._consumer_config["group.id"])
        self._target.flush(5)
        if self._syncs_producer is not self._target:
            self._syncs_producer.flush(5)
