"""A Spark session on loopback with the ``hotstandby`` format registered: for the drill, the
examples, the benchmark and the tests — ``local[cores]``, or a standalone cluster's master
(:mod:`hotstandby.refcluster.spark_servers`)."""

from __future__ import annotations

import os
import sys
from typing import Any

from hotstandby.spark_integration import register

__all__ = ["local_session"]


def local_session(app_name: str, *, cores: int = 2, master: str | None = None, **conf: str) -> Any:
    """``SparkSession`` on ``local[cores]`` (or on ``master``: ``spark://127.0.0.1:PORT``, its
    executors with at most ``cores`` cores): driver and workers on 127.0.0.1, no UI, this Python
    for the workers, Spark's own log at ERROR; ``conf`` adds Spark settings."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master or f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )
    if master:
        builder = builder.config("spark.cores.max", str(cores)).config("spark.executor.memory", "1g")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
