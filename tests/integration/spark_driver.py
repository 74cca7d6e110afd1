"""A Spark driver in a process of its own, for the tests of a standalone Spark cluster and of
Spark Connect (a process holds one Spark context; the tests' shared session is local)::

    python -m tests.integration.spark_driver (--master spark://H:P | --remote sc://H:P) \\
        --options JSON [--stream]

It reads the ``hotstandby`` source with the given options — in batch, or with ``--stream`` as
a streaming query with an available-now trigger into a memory table — and prints one JSON
document on stdout: ``{"values": [...], "clusters": [...]}``, each value of the ``value``
column as text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

from hotstandby.spark_integration import FORMAT, register


def _session(args: argparse.Namespace) -> Any:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    if args.remote:
        spark = SparkSession.builder.remote(args.remote).getOrCreate()
        register(spark)
        return spark
    from hotstandby.spark_integration.local_session import local_session

    return local_session("hotstandby-tests-driver", master=args.master)


def _read(spark: Any, options: dict[str, str], stream: bool) -> list[Any]:
    if not stream:
        return list(spark.read.format(FORMAT).options(**options).load().select("value", "cluster").collect())
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format(FORMAT)
            .options(**options)
            .load()
            .select("value", "cluster")
            .writeStream.format("memory")
            .queryName("read_back")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        if query.isActive:
            query.stop()
            raise TimeoutError("the available-now query did not end within 300 s")
        return list(spark.sql("SELECT value, cluster FROM read_back").collect())


def main() -> int:
    p = argparse.ArgumentParser()
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--master")
    where.add_argument("--remote")
    p.add_argument("--options", required=True, type=json.loads)
    p.add_argument("--stream", action="store_true")
    args = p.parse_args()
    out = sys.stdout
    sys.stdout = sys.stderr  # Spark's own output stays off the JSON
    spark = _session(args)
    try:
        rows = _read(spark, args.options, args.stream)
    finally:
        spark.stop()
    values = sorted(bytes(r.value).decode() for r in rows)
    out.write(json.dumps({"values": values, "clusters": sorted({r.cluster for r in rows})}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
