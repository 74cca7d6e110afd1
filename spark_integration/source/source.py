"""The ``hotstandby`` data source: PySpark's Python Data Source API over the failover core.

Spark creates the source and its readers on the driver and pickles readers to the executors,
so nothing here connects in ``__init__``: the driver-side planner (:class:`StreamPlanner`) is
made on first use in Spark's Python runner for the query, and executors connect in ``read``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from hotstandby.errors import ConfigError
from hotstandby.spark_integration.sink.options import SinkOptions, parse_sink_options
from hotstandby.spark_integration.sink.sink import HotStandbyStreamWriter, HotStandbyWriter, check_columns
from hotstandby.spark_integration.source.batch import plan_batch
from hotstandby.spark_integration.source.cluster_plan import ReadsPartition
from hotstandby.spark_integration.source.offsets import SourceOffset
from hotstandby.spark_integration.source.options import SourceOptions, parse_options
from hotstandby.spark_integration.source.stream_planner import StreamPlanner
from hotstandby.spark_integration.source.systems import route_kind, schema_ddl, sink_writer, system

__all__ = ["HotStandbyDataSource", "HotStandbyReader", "HotStandbyStreamReader"]


class HotStandbyDataSource(DataSource):
    """``spark.read.format("hotstandby")``, ``spark.readStream.format("hotstandby")`` and the
    sink, ``df.write.format("hotstandby")``, ``df.writeStream.format("hotstandby")``."""

    @classmethod
    def name(cls) -> str:
        return "hotstandby"

    def schema(self) -> str:
        return schema_ddl(parse_options(self.options, streaming=False))

    def reader(self, schema: StructType) -> HotStandbyReader:
        return HotStandbyReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> HotStandbyStreamReader:
        return HotStandbyStreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> HotStandbyWriter:
        return HotStandbyWriter(*_sink(self.options, schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> HotStandbyStreamWriter:
        return HotStandbyStreamWriter(*_sink(self.options, schema, overwrite))


def _sink(options: Mapping[str, str], schema: StructType, overwrite: bool) -> tuple[SinkOptions, str]:
    """The sink's options and the route's kind, the frame checked against it."""
    if overwrite:
        raise ConfigError("the hotstandby sink appends: a topic cannot be overwritten (use mode append)")
    sink = parse_sink_options(options)
    kind = route_kind(sink)
    sink_writer(kind)  # refuses a kind the sink does not write
    check_columns(kind, schema, sink)
    return sink, kind


def _partitions(tasks: Sequence[ReadsPartition]) -> list[InputPartition]:
    return [InputPartition(task) for task in tasks]


class HotStandbyReader(DataSourceReader):
    """A batch read: planned on the driver, read by executors."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> list[InputPartition]:
        return _partitions(plan_batch(self._options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task: ReadsPartition = partition.value
        return iter(task.read())


class HotStandbyStreamReader(DataSourceStreamReader):
    """A streaming read; its offsets name route, epoch and cluster (see ``offsets``)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._planner: StreamPlanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"_options": self._options, "_planner": None}  # executors only read

    def _plan(self, since: SourceOffset | None = None) -> StreamPlanner:
        if self._planner is None:
            kind = route_kind(self._options)
            self._planner = StreamPlanner(self._options, since, kind, system(kind).open_plan)
        return self._planner

    def initialOffset(self) -> dict[str, Any]:
        return self._plan().initial().to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._options.trigger_limit
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset = SourceOffset.from_dict(start)
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = self._plan(offset).latest(offset, rows)
        return start if end is offset else end.to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, stop = SourceOffset.from_dict(start), SourceOffset.from_dict(end)
        # The end, not the start: a restarted query replays its last batch first, and its end
        # is where the query stands (its start may name a cluster and epoch from before a switch).
        return _partitions(self._plan(stop).tasks(begin, stop))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task: ReadsPartition = partition.value
        return iter(task.read())

    def commit(self, end: dict[str, Any]) -> None:
        offset = SourceOffset.from_dict(end)
        self._plan(offset).commit(offset)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None
