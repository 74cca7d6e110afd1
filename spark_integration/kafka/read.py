"""What an executor does with one planned task: read its offset ranges with the Kafka client
(assign and seek), drop what the query's ledger holds and what the task already emitted, and
return the rest as Arrow record batches.

A streaming task then stages the identities it emitted under its batch
(:class:`~hotstandby.failover.ledger.staged.StagedAcks`); the driver merges them into the
ledger when Spark commits the batch. A task that runs again reads the same ranges against the
same ledger and stages the same value.

A task whose cluster stops answering (or loses the records) after the route moved to another
cluster reads its partitions there instead (:mod:`.replan`), so the query goes on. A task run
again after its cluster lost the batch's records (a topic there created again, which the
driver notices: ``rebuilt``) emits what its first run emitted, picked out of their copies on
another cluster and put back in the first run's order, so writers that name rows by their
position (the failover-aware sink) name each row as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.emission_order import EmissionOrder
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import StagedPart
from hotstandby.logs import get_logger
from hotstandby.spark_integration.kafka.cluster import client_config
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.planning import Range, Task
from hotstandby.spark_integration.source.replan import STALL_S, Replan, Replans, replan_task
from hotstandby.spark_integration.source.schema import RowBuffer
from hotstandby.spark_integration.source.task_run import ClusterGone, TaskPlace, run_task

__all__ = ["DataLossError", "ReadTask", "read_task"]

log = get_logger("hotstandby.spark")

_ROWS_PER_BATCH = 8192
_WATERMARK_TIMEOUT_S = 5.0
# Errors librdkafka reports while it reconnects: no reason to fail a task by themselves.
_PASSING = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError._TIMED_OUT})
_READ_GROUP = "__hotstandby-spark-read"  # assign() reads: nothing joins or commits under it


class DataLossError(KafkaException):
    """Records a batch planned are no longer on the cluster (``failOnDataLoss``)."""


@dataclass(frozen=True)
class ReadTask:
    """One Spark input partition: what to read, where, and under which batch to stage it."""

    spec: ClusterSpec
    options: SourceOptions
    epoch: int
    task: Task
    batch: str | None = None  # streaming: the batch's name for staged acknowledgements
    part: int = 0
    rebuilt: bool = False  # a topic of its ranges was created again since the batch was planned
    detour: bool = False  # on another cluster than the route's, on purpose (:mod:`.kafka_detour`)

    def read(self) -> Iterator[pa.RecordBatch]:
        return read_task(self)


def _lost(options: SourceOptions, cluster: str, r: Range, at: int, why: str) -> None:
    message = f"{r.topic}[{r.partition}] offsets {at}..{r.end} on {cluster}: {why}"
    if options.fail_on_data_loss:
        raise DataLossError(KafkaError(KafkaError._FAIL, f"data loss: {message} (failOnDataLoss=false to go on)"))
    log.warning("spark.data_lost", cluster=cluster, topic=r.topic, partition=r.partition, start=at, end=r.end)


def _records(
    consumer: RawConsumer, options: SourceOptions, cluster: str, r: Range, gone: Callable[[], bool]
) -> Iterator[list[Message]]:
    """The records of ``r`` in offset order, a fetched batch at a time (fewer when some are
    gone: see ``_lost``); raises :class:`ClusterGone` when the cluster stalls or lost them and
    ``gone()`` says the route moved away from it."""
    consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
    timeout_s = options.poll_timeout_ms / 1000
    progress = time.monotonic()
    expected = r.start
    try:
        while expected < r.end:
            idle = time.monotonic() - progress
            if idle > STALL_S and gone():
                raise ClusterGone()
            if idle > timeout_s:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                                f"reading {r.topic}[{r.partition}] up to {r.end} on {cluster}: "
                                                f"at {expected} after {options.poll_timeout_ms} ms"))  # fmt: skip
            batch: list[Message] = []
            for msg in consumer.consume(num_messages=_ROWS_PER_BATCH, timeout=0.5):
                if expected >= r.end:
                    break
                err = msg.error()
                if err is not None:
                    if err.code() in _PASSING:
                        continue  # the broker may be gone: the stall check above decides
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    # The end of what the last fetch saw, not always the partition's end: ask.
                    low, high = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition),
                                                               timeout=_WATERMARK_TIMEOUT_S, cached=False)  # fmt: skip
                    if high <= expected or low > expected:
                        if gone():
                            raise ClusterGone()
                        _lost(options, cluster, r, expected, f"the partition holds offsets {low}..{high} now")
                        expected = r.end  # nothing more to wait for
                        break
                    continue
                offset = msg.offset()
                if offset is None or offset < expected:
                    continue
                if offset >= r.end:
                    expected = r.end
                    break
                if offset > expected:
                    if gone():
                        raise ClusterGone()
                    _lost(options, cluster, r, expected, f"the next record there is at {offset}")
                expected = offset + 1
                batch.append(msg)
            if batch:
                progress = time.monotonic()
                yield batch
    finally:
        consumer.unassign()


def _headers(msg: Message) -> list[tuple[str, bytes | None]]:
    found = msg.headers()
    return (
        [(k, v if isinstance(v, bytes) or v is None else str(v).encode()) for k, v in found]
        if isinstance(found, list)
        else []
    )


def _identity(msg: Message) -> tuple[RecordId | None, bytes | None]:
    headers = msg.headers()
    if isinstance(headers, list):
        for key, value in headers:
            if key == HEADER and isinstance(value, bytes):
                try:
                    return RecordId.decode(value), value
                except FormatError:
                    return None, value  # not ours to judge: emitted, unfiltered
    return None, None


class _TaskReader:
    """Reads ranges for one task, dropping what the ledger holds or the task emitted already."""

    def __init__(self, options: SourceOptions, task: Task, ledger: PartitionLedger, *, dedupe: bool) -> None:
        self._options = options
        self._task = task
        self._ledger = ledger
        self._dedupe = dedupe
        self._seen: set[RecordId] = set()  # what this task emitted, by identity
        self._timestamps: dict[str, dict[int, int]] = {}
        self._order = EmissionOrder()
        self.filtered = 0

    @property
    def emitted_count(self) -> int:
        return len(self._seen)

    def emitted(self) -> StagedPart:
        """What the task emitted, to stage: identities and the last timestamp per partition."""
        return StagedPart.of(self._task.logical, self._task.partition, self._seen, timestamps=self._timestamps,
                             order=self._order)  # fmt: skip

    def read(
        self, spec: ClusterSpec, epoch: int, ranges: tuple[Range, ...], gone: Callable[[], bool]
    ) -> Iterator[pa.RecordBatch]:
        opts, logical = self._options, self._task.logical
        dedupe, ledger, seen, headers_wanted = self._dedupe, self._ledger, self._seen, opts.include_headers
        order = self._order
        buffer = RowBuffer(include_headers=headers_wanted, cluster=spec.name, epoch=epoch)
        consumer = RawConsumer(with_logger({**client_config(spec, opts), "group.id": _READ_GROUP,
                                            "enable.partition.eof": True}))  # fmt: skip
        try:
            for r in ranges:
                last_ts: int | None = None
                for batch in _records(consumer, opts, spec.name, r, gone):
                    for msg in batch:
                        rid, raw_id = _identity(msg)
                        if rid is not None and dedupe:
                            if ledger.has(rid) or rid in seen:
                                self.filtered += 1
                                continue
                            seen.add(rid)
                            order.add(rid)
                        kind, ts = stamp = msg.timestamp()
                        if kind:
                            last_ts = ts
                        buffer.add(msg.key(), msg.value(), logical, r.partition, msg.offset() or 0, stamp,
                                   _headers(msg) if headers_wanted else None, raw_id)  # fmt: skip
                    if len(buffer) >= _ROWS_PER_BATCH:
                        yield buffer.flush()
                if last_ts is not None:
                    self._timestamps.setdefault(r.topic, {})[r.partition] = last_ts
        finally:
            consumer.close()
        if len(buffer):
            yield buffer.flush()

    def reread(
        self, spec: ClusterSpec, epoch: int, ranges: tuple[Range, ...], first: StagedPart
    ) -> Iterator[pa.RecordBatch]:
        """Emit again what an earlier run of the task emitted (``first``), picked out of
        ``ranges`` on ``spec`` and put back in that run's order (see the module docs)."""
        opts, wanted, seen = self._options, first.ledger, self._seen
        total, order = len(wanted), first.order
        # Emitted already by this run, before its cluster went (the start of the same order).
        already = sum(1 for rid in seen if wanted.has(rid))
        unidentified = 0  # the first run emitted them or not: nothing tells
        found: list[tuple[tuple[int, int], int, Message]] = []
        consumer = RawConsumer(with_logger({**client_config(spec, opts), "group.id": _READ_GROUP,
                                            "enable.partition.eof": True}))  # fmt: skip
        try:
            for r in ranges:
                if already + len(found) >= total:
                    break
                for batch in _records(consumer, opts, spec.name, r, lambda: False):
                    for msg in batch:
                        rid, _ = _identity(msg)
                        if rid is None:
                            unidentified += 1
                            continue
                        if rid in seen or not wanted.has(rid):
                            self.filtered += 1
                            continue
                        seen.add(rid)
                        at = None if order is None else order.position(rid)
                        found.append(((0, at) if at is not None else (1, len(found)), r.partition, msg))
                    if already + len(found) >= total:
                        break
        finally:
            consumer.close()
        if already + len(found) < total:
            message = (f"{total - already - len(found)} of the {total} records an earlier run of this task emitted "
                       f"({self._task.logical}[{self._task.partition}]) are not on {spec.name}")  # fmt: skip
            if opts.fail_on_data_loss:
                raise DataLossError(
                    KafkaError(KafkaError._FAIL, f"data loss: {message} (failOnDataLoss=false to go on)")
                )
            log.warning("spark.data_lost", cluster=spec.name, topic=self._task.logical, partition=self._task.partition,
                        missing=total - already - len(found))  # fmt: skip
        if unidentified:
            log.warning("spark.replay_unidentified", cluster=spec.name, topic=self._task.logical,
                        partition=self._task.partition, skipped=unidentified)  # fmt: skip
        if order is None:
            log.warning("spark.replay_order_unknown", topic=self._task.logical, partition=self._task.partition)
        found.sort(key=lambda item: item[0])
        buffer = RowBuffer(include_headers=opts.include_headers, cluster=spec.name, epoch=epoch)
        for _, partition, msg in found:
            rid, raw_id = _identity(msg)
            assert rid is not None
            self._order.add(rid)
            stamp = msg.timestamp()
            if stamp[0]:
                self._timestamps.setdefault(msg.topic() or "", {})[partition] = stamp[1]
            buffer.add(msg.key(), msg.value(), self._task.logical, partition, msg.offset() or 0, stamp,
                       _headers(msg) if opts.include_headers else None, raw_id)  # fmt: skip
            if len(buffer) >= _ROWS_PER_BATCH:
                yield buffer.flush()
        if len(buffer):
            yield buffer.flush()


def read_task(rt: ReadTask) -> Iterator[pa.RecordBatch]:
    """Read ``rt`` (on an executor); see the module docs."""
    task = rt.task
    place = TaskPlace(rt.options, rt.spec, rt.epoch, task.logical, task.partition, rt.batch, rt.part, rt.rebuilt)

    def replanned(
        reader: _TaskReader, spec: ClusterSpec, plan: Replan, first: StagedPart | None
    ) -> Iterator[pa.RecordBatch]:
        if first is not None:
            return reader.reread(spec, plan.epoch, plan.ranges, first)
        return reader.read(spec, plan.epoch, plan.ranges, lambda: False)

    yield from run_task(
        place,
        lambda ledger, dedupe: _TaskReader(rt.options, task, ledger, dedupe=dedupe),
        lambda reader, moved: reader.read(rt.spec, rt.epoch, task.ranges, (lambda: False) if rt.detour else moved),
        lambda center, replans, first: _replan(center, replans, rt, first),
        replanned,
    )


def _replan(center: ConfigCenter, replans: Replans, rt: ReadTask, first: StagedPart | None) -> Replan:
    assert rt.batch is not None
    plan = replan_task(center, rt.options, rt.spec.name, rt.task.logical, rt.task.ranges, rebuilt=rt.rebuilt,
                       from_beginning=first is not None)  # fmt: skip
    if plan is None:
        why = "lost the batch's records and the route has no other cluster" if rt.rebuilt else "stopped answering"
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, f"{rt.spec.name} {why}"))
    stored = replans.claim(rt.batch, rt.part, plan)
    log.warning("spark.task_replanned", batch=rt.batch, part=rt.part, came_from=rt.spec.name, cluster=stored.cluster,
                epoch=stored.epoch, strategies=dict(stored.strategies))  # fmt: skip
    return stored
