"""What an executor does with one planned Pulsar task: read one partition with a reader from
the message after the batch's start to the end of the batch's last entry, drop what the
query's ledger holds and what the task emitted already, and return the rest as Arrow record
batches; a streaming task then stages what it emitted (as :mod:`hotstandby.spark_integration.kafka.read` does).

A task whose cluster stops sending after the route moved to another cluster reads the
partition there from its first message instead (the ledger and what it emitted drop what it
read before); that plan is kept under the batch (:mod:`.replan`), so a replay reads the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pulsar
import pyarrow as pa

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM, identity_in
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.staged import Copies, CopyMark, StagedPart, copy_from, merge_copies, read_on
from hotstandby.logs import get_logger
from hotstandby.spark_integration.pulsar.cluster import PulsarCluster, client_kwargs, id_key, message_id
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.replan import STALL_S, Replan, Replans
from hotstandby.spark_integration.source.schema import PulsarRows
from hotstandby.spark_integration.source.task_run import ClusterGone, TaskPlace, run_task

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
    copies: tuple[tuple[str, str], ...] = ()  # committed batches' newest copies: (origin, CopyMark text)

    def read(self) -> Iterator[pa.RecordBatch]:
        return read_pulsar_task(self)


def _messages(reader: pulsar.Reader, task: PulsarReadTask, cluster: str, start_id: str, end_id: str,
              moved: Callable[[], bool]) -> Iterator[pulsar.Message]:  # fmt: skip
    """Messages after ``start_id``'s entry up to the end of ``end_id``'s: batches end after
    whole entries, so a reader that starts inside the previous batch's last entry skips it."""
    start, end = id_key(start_id), id_key(end_id)
    timeout_s = task.options.poll_timeout_ms / 1000
    progress = time.monotonic()
    in_last_entry = False
    while True:
        idle = time.monotonic() - progress
        if idle > STALL_S and moved():
            raise ClusterGone()
        if idle > timeout_s:
            raise pulsar.Timeout(f"reading {task.topic} up to {end_id} on {cluster}: "
                                 f"nothing for {task.options.poll_timeout_ms} ms")  # fmt: skip
        try:
            msg = reader.read_next(timeout_millis=_READ_MS)
        except pulsar.Timeout:
            if in_last_entry:
                return  # a batch entry arrives whole: nothing more of it is coming
            continue
        progress = time.monotonic()
        mid = msg.message_id()
        at = (mid.ledger_id(), mid.entry_id())
        if at > end:
            return
        if at <= start:
            continue
        yield msg
        if at == end:
            if mid.batch_index() < 0:
                return  # the last entry held one message
            # More of the last entry's batch may follow. Not has_message_available(): the
            # broker's last id names the entry, not the message in it, and it can say "no
            # more" halfway through the batch.
            in_last_entry = True


class _PartitionReader:
    """Reads one partition's messages for a task, dropping what the ledger holds or the task
    emitted already."""

    def __init__(self, task: PulsarReadTask, ledger: PartitionLedger, *, dedupe: bool) -> None:
        self._task = task
        self._ledger = ledger
        self._dedupe = dedupe
        self.seen: set[RecordId] = set()
        self.filtered = 0
        # topic -> cluster a copy came from -> the newest copy read: (its source position, identity)
        self._copies: dict[str, dict[str, tuple[str, RecordId]]] = {}

    @property
    def emitted_count(self) -> int:
        return len(self.seen)

    def emitted(self) -> StagedPart:
        """What the task emitted, to stage: identities and the newest copies read."""
        return StagedPart.of(self._task.logical, self._task.partition, self.seen, copies=self.copies())

    def copies(self) -> Copies:
        """The newest replicated copy read per topic and cluster it came from (a later switch
        to that cluster starts there)."""
        out: Copies = {}
        for topic, origins in self._copies.items():
            for origin, (position, rid) in origins.items():
                try:
                    ledger, entry = (int(n) for n in position.split(":"))
                except ValueError:
                    continue  # not Pulsar's "ledger:entry": tells nothing
                out.setdefault(topic, {})[origin] = CopyMark(ledger, entry, rid)
        return out

    def read(self, spec: ClusterSpec, epoch: int, topic: str, start: str, end: str,
             moved: Callable[[], bool]) -> Iterator[pa.RecordBatch]:  # fmt: skip
        task, opts = self._task, self._task.options
        rows = PulsarRows(cluster=spec.name, epoch=epoch)
        client = pulsar.Client(spec.url, **client_kwargs(spec, opts))
        try:
            begin = message_id(start) if start else pulsar.MessageId.earliest
            try:
                reader = client.create_reader(topic, begin, start_message_id_inclusive=False, **opts.pulsar_reader)
            except (pulsar.Timeout, pulsar.ConnectError) as exc:
                if moved():
                    raise ClusterGone() from exc
                raise
            copies = self._copies.setdefault(topic, {})
            for msg in _messages(reader, task, spec.name, start, end, moved):
                properties = msg.properties()
                rid = identity_in(properties, msg)
                position = properties.get(REPL_SOURCE_POSITION)
                if position is not None and rid is not None:
                    copies[properties.get(REPLICATED_FROM) or read_on(spec.name)] = (position, rid)
                if rid is not None and self._dedupe:
                    if self._ledger.has(rid) or rid in self.seen:
                        self.filtered += 1
                        continue
                    self.seen.add(rid)
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


def _replan(center: ConfigCenter, replans: Replans, task: PulsarReadTask, read: Copies) -> Replan:
    """The partition on the route's active cluster, after the newest copy from there that the
    query read (committed batches' and this task's, ``read``), or from its first message, to its
    last now."""
    assert task.batch is not None
    route = center.route(task.options.route)
    spec = center.cluster(route.active)
    marks: Copies = {task.topic: {o: CopyMark.parse(m) for o, m in task.copies}}
    merge_copies(marks, read)
    cluster = PulsarCluster(spec, task.options)
    try:
        end = cluster.last_ids([task.topic])[task.topic]
        start = cluster.after_copy(task.topic, copy_from(spec.name, marks[task.topic], route.clusters))
    finally:
        cluster.close()
    strategy = "replicated-source-position" if start else "earliest"
    plan = Replan(spec.name, route.epoch, (), {strategy: 1}, ((task.topic, start, end),))
    stored = replans.claim(task.batch, task.part, plan)
    log.warning("spark.task_replanned", batch=task.batch, part=task.part, came_from=task.spec.name,
                cluster=stored.cluster, epoch=stored.epoch, strategies=dict(stored.strategies))  # fmt: skip
    return stored


def read_pulsar_task(task: PulsarReadTask) -> Iterator[pa.RecordBatch]:
    """Read ``task`` (on an executor); see the module docs."""

    def replanned(
        reader: _PartitionReader, spec: ClusterSpec, plan: Replan, _first: StagedPart | None
    ) -> Iterator[pa.RecordBatch]:
        for topic, start, end in plan.ids:
            if end:
                yield from reader.read(spec, plan.epoch, topic, start, end, lambda: False)

    readers: list[_PartitionReader] = []

    def reader_for(ledger: PartitionLedger, dedupe: bool) -> _PartitionReader:
        readers.append(_PartitionReader(task, ledger, dedupe=dedupe))
        return readers[-1]

    place = TaskPlace(task.options, task.spec, task.epoch, task.logical, task.partition, task.batch, task.part)
    yield from run_task(
        place,
        reader_for,
        lambda reader, moved: reader.read(task.spec, task.epoch, task.topic, task.start, task.end, moved),
        lambda center, replans, _first: _replan(center, replans, task, readers[-1].copies()),
        replanned,
    )
