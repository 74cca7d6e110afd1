"""PySpark data source reading through hotstandby's failover logic (``hotstandby[spark]``).

::

    from hotstandby.spark_integration import register

    register(spark)
    stream = (spark.readStream.format("hotstandby")
              .option("hotstandby.route", "orders").option("hotstandby.group", "orders-etl")
              .option("subscribe", "orders").load())

Importing this package does not import pyspark; :func:`register` does. It prints the SDK's
events on stderr when ``HOTSTANDBY_LOG_LEVEL`` is set (Spark's Python workers have no logging
setup of the application's). See docs/spark.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from hotstandby.errors import MissingDependencyError
from hotstandby.logs import configure_from_env
from hotstandby.registry import import_adapter_module

__all__ = ["FORMAT", "register"]

#: The name to give ``spark.read.format`` and ``spark.readStream.format``.
FORMAT = "hotstandby"

# Spark's Python workers and streaming runner import this package before anything of the
# source runs, and run no logging setup of the application's: HOTSTANDBY_LOG_LEVEL is theirs.
configure_from_env()


def register(spark: Any) -> None:
    """Register the ``hotstandby`` format with ``spark`` (a ``SparkSession``)."""
    import_adapter_module("kafka")  # a missing confluent-kafka says which extra to install
    try:  # imported here: importing this package must not import pyspark
        source = importlib.import_module("hotstandby.spark_integration.source.source")
    except ImportError as exc:
        raise MissingDependencyError(
            f"the Spark source needs pyspark and pyarrow: pip install 'hotstandby[spark]' ({exc})"
        ) from exc
    spark.dataSource.register(source.HotStandbyDataSource)
