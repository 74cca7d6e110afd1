"""Which module plans reads for which kind of cluster, and the schema of a route's rows.

Each module here has ``open_plan(spec, options, context)`` (a
:class:`~hotstandby.spark_integration.source.cluster_plan.ClusterPlan`), ``batch_tasks(options,
route, spec, links)`` and ``SCHEMA_DDL`` or ``schema_ddl(options)``; it is imported when a
route of its kind is read (it imports the system's client library).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigError
from hotstandby.spark_integration.sink.options import SinkOptions
from hotstandby.spark_integration.source.options import SourceOptions

__all__ = ["SINKS", "SYSTEMS", "route_kind", "schema_ddl", "sink_writer", "system"]

SYSTEMS = {
    "kafka": "hotstandby.spark_integration.kafka.plan",
    "pulsar": "hotstandby.spark_integration.pulsar.plan",
}

#: The sink's writer of each kind: a module with ``write_rows(options, rows, session)``.
SINKS = {
    "kafka": "hotstandby.spark_integration.sink.kafka",
    "pulsar": "hotstandby.spark_integration.sink.pulsar",
}


def sink_writer(kind: str) -> ModuleType:
    if kind not in SINKS:
        raise ConfigError(f"the Spark sink writes {' and '.join(SINKS)} routes, not {kind!r}")
    return importlib.import_module(SINKS[kind])


def system(kind: str) -> ModuleType:
    if kind not in SYSTEMS:
        raise ConfigError(f"the Spark source reads {' and '.join(SYSTEMS)} routes, not {kind!r}")
    return importlib.import_module(SYSTEMS[kind])


def route_kind(options: SourceOptions | SinkOptions) -> str:
    """The kind of the route's active cluster (read from the config center)."""
    with ConfigCenter.open(options.settings) as center:
        return center.cluster(center.route(options.route).active).kind


def schema_ddl(options: SourceOptions) -> str:
    """The rows' schema for the route's kind."""
    ddl: str = system(route_kind(options)).schema_ddl(options)
    return ddl
