"""``df.write.format("hotstandby")`` and ``df.writeStream.format("hotstandby")``: rows to the
route's active cluster, with identities that make a batch written again harmless.

Each task writes through the SDK's producer (Kafka) or client (Pulsar), which follows the route:
a flip during a write moves the rest of the task to the new cluster and re-sends what the old
one had not acknowledged. Each task's rows get identities derived from the query, the batch,
the task's partition and the rows' order (:mod:`~hotstandby.spark_integration.sink.identity`).
A task reports its rows only once all are acknowledged; otherwise it fails, and Spark's retry
writes the same identities again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from hotstandby.errors import ConfigError, HotStandbyError
from hotstandby.logs import get_logger
from hotstandby.spark_integration.sink.identity import BATCH_ID, QUERY_ID, task_session
from hotstandby.spark_integration.sink.options import SinkOptions
from hotstandby.spark_integration.sink.result import TaskWrite
from hotstandby.spark_integration.source.systems import sink_writer

__all__ = ["HotStandbyStreamWriter", "HotStandbyWriter", "check_columns"]

log = get_logger("hotstandby.spark.sink")

# The columns each kind of route takes (Spark's Kafka sink; the Pulsar connector's).
_COLUMNS = {
    "kafka": ({"value"}, {"key", "value", "topic", "partition", "headers"}, "topic"),
    "pulsar": ({"value"}, {"value", "__key", "__topic", "__eventTime", "__messageProperties"}, "__topic"),
}


def check_columns(kind: str, schema: StructType, options: SinkOptions) -> None:
    """Refuse a frame the route's kind cannot write (before any task runs)."""
    required, allowed, topic_column = _COLUMNS[kind]
    names = set(schema.fieldNames())
    missing = required - names
    if missing:
        raise ConfigError(f"the sink needs a {' and '.join(sorted(missing))} column for a {kind} route")
    extra = names - allowed
    if extra:
        raise ConfigError(
            f"the sink writes the columns {', '.join(sorted(allowed))} to a {kind} route, not {', '.join(sorted(extra))}"
        )
    if options.topic is None and topic_column not in names:
        raise ConfigError(f"give the topic option or a {topic_column} column")


def _writer(kind: str) -> Callable[[SinkOptions, Iterator[Any], bytes], TaskWrite]:
    write: Callable[[SinkOptions, Iterator[Any], bytes], TaskWrite] = sink_writer(kind).write_rows
    return write


def _task() -> Any:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise HotStandbyError("the sink writes in Spark tasks only")
    return context


def _log_commit(messages: list[WriterCommitMessage | None], what: str) -> None:
    writes = [m for m in messages if isinstance(m, TaskWrite)]
    log.info("spark.sink.committed", what=what, tasks=len(writes), rows=sum(w.rows for w in writes),
             clusters=sorted({w.cluster for w in writes}), resent=sum(w.resent for w in writes))  # fmt: skip


class HotStandbyWriter(DataSourceWriter):
    """Batch writes: identities from ``hotstandby.writeId`` (or a name made once per write)."""

    def __init__(self, options: SinkOptions, kind: str) -> None:
        self._options, self._kind = options, kind
        self._write_id = options.write_id or uuid.uuid4().hex  # made on the driver: retries share it

    def write(self, iterator: Iterator[Any]) -> TaskWrite:
        session = task_session(self._write_id, 0, _task().partitionId())
        return _writer(self._kind)(self._options, iterator, session)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _log_commit(messages, f"write {self._write_id}")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("spark.sink.aborted", write=self._write_id, tasks_written=sum(1 for m in messages if m))


class HotStandbyStreamWriter(DataSourceStreamWriter):
    """Streaming writes: identities from the query's id (kept in its checkpoint) and the batch id."""

    def __init__(self, options: SinkOptions, kind: str) -> None:
        self._options, self._kind = options, kind

    def write(self, iterator: Iterator[Any]) -> TaskWrite:
        context = _task()
        query, batch = context.getLocalProperty(QUERY_ID), context.getLocalProperty(BATCH_ID)
        if query is None or batch is None:
            raise HotStandbyError("the streaming sink found no query id or batch id in its task")
        session = task_session(query, int(batch), context.partitionId())
        return _writer(self._kind)(self._options, iterator, session)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _log_commit(messages, f"batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("spark.sink.aborted", batch=batchId, tasks_written=sum(1 for m in messages if m))
