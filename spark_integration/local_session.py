"""A local Spark session on loopback with the ``hotstandby`` format registered: for the drill,
the examples, the benchmark and the tests (a real cluster brings its own session)."""

from __future__ import annotations

import os
import sys
from typing import Any

from hotstandby.spark_integration import register

__all__ = ["local_session"]


def local_session(app_name: str, *, cores: int = 2, **conf: str) -> Any:
    """``SparkSession`` on ``local[cores]``: driver and workers on 127.0.0.1, no UI, this Python
    for the workers, Spark's own log at ERROR; ``conf`` adds Spark settings."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
