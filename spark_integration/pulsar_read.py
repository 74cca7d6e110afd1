"""What an executor does with one planned Pulsar task: read one partition with a reader from
the message after the batch's start to the end of the batch's last entry, drop what the
query's ledger holds and what the task emitted already, and return the rest as Arrow record
batches; a streaming task then stages what it emitted (as :mod:`.kafka_read` does).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pulsar
import pyarrow as pa

from hotstandby.adapters.pulsar.adapter import identity_in
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import StagedAcks, StagedPart
from hotstandby.logs import get_logger
from hotstandby.spark_integration.options import SourceOptions
from hotstandby.spark_integration.pulsar_cluster import client_kwargs, id_key, message_id
from hotstandby.spark_integration.schema import PulsarRows

__all__ = ["PulsarReadTask", "read_pulsar_task"]

log = get_logger("hotstandby.spark")

_ROWS_PER_BATCH = 8192
_READ_MS = 500


@dataclass(frozen=True)
class PulsarReadTask:
    """One Spark input partition of a Pulsar route: messages after ``start`` (a kept message
    id; "" for the partition's first) up to the end of ``end``'s entry."""

    spec: ClusterSpec
    options: SourceOptions
    epoch: int
    topic: str  # the partition's topic name
    logical: str  # its topic, without the partition suffix
    partition: int
    start: str
    end: str
    batch: str | None = None
    part: int = 0

    def read(self) -> Iterator[pa.RecordBatch]:
        return read_pulsar_task(self)


def _messages(reader: pulsar.Reader, task: PulsarReadTask) -> Iterator[pulsar.Message]:
    end = id_key(task.end)
    timeout_s = task.options.poll_timeout_ms / 1000
    progress = time.monotonic()
    while True:
        if time.monotonic() - progress > timeout_s:
            raise pulsar.Timeout(f"reading {task.topic} up to {task.end} on {task.spec.name}: "
                                 f"nothing for {task.options.poll_timeout_ms} ms")  # fmt: skip
        try:
            msg = reader.read_next(timeout_millis=_READ_MS)
        except pulsar.Timeout:
            continue
        progress = time.monotonic()
        mid = msg.message_id()
        at = (mid.ledger_id(), mid.entry_id())
        if at > end:
            return
        yield msg
        if at == end and not reader.has_message_available():
            return  # the end's entry was the last one


def read_pulsar_task(task: PulsarReadTask) -> Iterator[pa.RecordBatch]:
    """Read ``task`` (on an executor); see the module docs."""
    opts = task.options
    streaming = task.batch is not None and bool(opts.group)
    center = ConfigCenter.open(opts.settings) if streaming else None
    try:
        staged = StagedAcks(center, opts.group) if center is not None and opts.group else None
        ledger = staged.load(task.logical, task.partition) if staged is not None else PartitionLedger()
        dedupe = staged is not None or opts.dedupe
        seen: set[RecordId] = set()
        rows = PulsarRows(cluster=task.spec.name, epoch=task.epoch)
        filtered = 0
        client = pulsar.Client(task.spec.url, **client_kwargs(task.spec, opts))
        try:
            start = message_id(task.start) if task.start else pulsar.MessageId.earliest
            reader = client.create_reader(task.topic, start, start_message_id_inclusive=False, **opts.pulsar_reader)
            for msg in _messages(reader, task):
                properties = msg.properties()
                rid = identity_in(properties, msg)
                if rid is not None and dedupe:
                    if ledger.has(rid) or rid in seen:
                        filtered += 1
                        continue
                    seen.add(rid)
                raw_id = properties.get(HEADER)
                rows.add(msg.data(), msg.partition_key(), task.logical, bytes(msg.message_id().serialize()),
                         msg.publish_timestamp(), msg.event_timestamp(), properties,
                         bytes.fromhex(raw_id) if rid is not None and raw_id else None)  # fmt: skip
                if len(rows) >= _ROWS_PER_BATCH:
                    yield rows.flush()
            reader.close()
        finally:
            client.close()
        if len(rows):
            yield rows.flush()
        if staged is not None and task.batch is not None:
            staged.stage(task.batch, task.part, StagedPart.of(task.logical, task.partition, seen))
        if filtered:
            log.info("spark.task_filtered", topic=task.logical, partition=task.partition, filtered=filtered,
                     emitted=len(seen), cluster=task.spec.name)  # fmt: skip
    finally:
        if center is not None:
            center.close()
