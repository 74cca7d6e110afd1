"""What an executor does with one planned task: read its offset ranges with the Kafka client
(assign and seek), drop what the query's ledger holds and what the task already emitted, and
return the rest as Arrow record batches.

A streaming task then stages the identities it emitted under its batch
(:class:`~hotstandby.failover.ledger.staged.StagedAcks`); the driver merges them into the
ledger when Spark commits the batch. A task that runs again reads the same ranges against the
same ledger and stages the same value.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import StagedAcks, StagedPart
from hotstandby.logs import get_logger
from hotstandby.spark_integration.kafka_cluster import client_config
from hotstandby.spark_integration.options import SourceOptions
from hotstandby.spark_integration.planning import Range, Task
from hotstandby.spark_integration.schema import RowBuffer

__all__ = ["DataLossError", "ReadTask", "read_task"]

log = get_logger("hotstandby.spark")

_ROWS_PER_BATCH = 8192
_WATERMARK_TIMEOUT_S = 5.0
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


def _lost(rt: ReadTask, r: Range, at: int, why: str) -> None:
    message = f"{r.topic}[{r.partition}] offsets {at}..{r.end} on {rt.spec.name}: {why}"
    if rt.options.fail_on_data_loss:
        raise DataLossError(KafkaError(KafkaError._FAIL, f"data loss: {message} (failOnDataLoss=false to go on)"))
    log.warning("spark.data_lost", cluster=rt.spec.name, topic=r.topic, partition=r.partition, start=at, end=r.end)


def _records(consumer: RawConsumer, rt: ReadTask, r: Range) -> Iterator[Message]:
    """The records of ``r`` in offset order (fewer when some are gone: see ``_lost``)."""
    consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
    deadline = time.monotonic() + rt.options.poll_timeout_ms / 1000
    expected = r.start
    try:
        while expected < r.end:
            if time.monotonic() > deadline:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                                f"reading {r.topic}[{r.partition}] up to {r.end} on {rt.spec.name}: "
                                                f"at {expected} after {rt.options.poll_timeout_ms} ms"))  # fmt: skip
            for msg in consumer.consume(num_messages=_ROWS_PER_BATCH, timeout=0.5):
                if expected >= r.end:
                    return
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    # The end of what the last fetch saw, not always the partition's end: ask.
                    low, high = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition),
                                                               timeout=_WATERMARK_TIMEOUT_S, cached=False)  # fmt: skip
                    if high <= expected or low > expected:
                        _lost(rt, r, expected, f"the partition holds offsets {low}..{high} now")
                        return
                    continue
                offset = msg.offset()
                if offset is None or offset < expected:
                    continue
                if offset >= r.end:
                    return
                if offset > expected:
                    _lost(rt, r, expected, f"the next record there is at {offset}")
                expected = offset + 1
                deadline = time.monotonic() + rt.options.poll_timeout_ms / 1000
                yield msg
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
    for key, value in _headers(msg):
        if key == HEADER and isinstance(value, bytes):
            try:
                return RecordId.decode(value), value
            except FormatError:
                return None, value  # not ours to judge: emitted, unfiltered
    return None, None


def read_task(rt: ReadTask) -> Iterator[pa.RecordBatch]:
    """Read ``rt`` (on an executor); see the module docs."""
    opts, task = rt.options, rt.task
    staged: StagedAcks | None = None
    center: ConfigCenter | None = None
    ledger = PartitionLedger()
    if rt.batch is not None and opts.group:
        center = ConfigCenter.open(opts.settings)
        staged = StagedAcks(center, opts.group)
        ledger = staged.load(task.logical, task.partition)
    try:
        emitted = StagedPart(task.logical, task.partition)
        dedupe = staged is not None or opts.dedupe
        seen: set[RecordId] = set()
        buffer = RowBuffer(include_headers=opts.include_headers, cluster=rt.spec.name, epoch=rt.epoch)
        now_ms = int(time.time() * 1000)
        filtered = 0
        consumer = RawConsumer({**client_config(rt.spec, opts), "group.id": _READ_GROUP, "enable.partition.eof": True})
        try:
            for r in task.ranges:
                last_ts: int | None = None
                for msg in _records(consumer, rt, r):
                    rid, raw_id = _identity(msg)
                    if rid is not None and dedupe:
                        if ledger.has(rid) or rid in seen:
                            filtered += 1
                            continue
                        seen.add(rid)
                        emitted.ledger.ack(rid, now_ms)
                    kind, ts = msg.timestamp()
                    last_ts = ts if kind else last_ts
                    headers = _headers(msg) if opts.include_headers else None
                    buffer.add(msg.key(), msg.value(), task.logical, r.partition, msg.offset() or 0, (kind, ts),
                               headers, raw_id)  # fmt: skip
                    if len(buffer) >= _ROWS_PER_BATCH:
                        yield buffer.flush()
                if last_ts is not None:
                    emitted.timestamps.setdefault(r.topic, {})[r.partition] = last_ts
        finally:
            consumer.close()
        if len(buffer):
            yield buffer.flush()
        if staged is not None and rt.batch is not None:
            staged.stage(rt.batch, rt.part, emitted)
        if filtered:
            log.info("spark.task_filtered", topic=task.logical, partition=task.partition, filtered=filtered,
                     emitted=len(emitted.ledger), cluster=rt.spec.name)  # fmt: skip
    finally:
        if center is not None:
            center.close()
