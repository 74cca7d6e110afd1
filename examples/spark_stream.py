"""A streaming Spark job reading route ``orders`` through hotstandby, exactly once across flips.

hotstandby refcluster up
python examples/spark_stream.py --out /tmp/orders            # in one terminal
hotstandby switch orders --to kafka-b                          # in another: the job follows

Each micro-batch is written to ``<out>/batch=<id>`` (overwritten when Spark replays a batch:
an idempotent sink), so every record lands once whichever cluster it was read on.
"""

from __future__ import annotations

import argparse
import os

from pyspark.sql import DataFrame

from hotstandby.spark_integration import FORMAT
from hotstandby.spark_integration.local_session import local_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--etcd", default=None, help="HOST:PORT (default: HOTSTANDBY_ETCD or 127.0.0.1:2379)")
    parser.add_argument("--route", default="orders")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="orders-example", help="the query's ledger (one per query)")
    parser.add_argument("--out", default="/tmp/hotstandby-orders", help="where batches are written")
    parser.add_argument("--seconds", type=float, default=3600.0, help="stop after this long")
    args = parser.parse_args()
    spark = local_session("hotstandby-example")  # local[2] on 127.0.0.1, the format registered
    reader = (
        spark.readStream.format(FORMAT)
        .option("hotstandby.route", args.route)
        .option("hotstandby.group", args.group)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
    )
    if args.etcd:
        reader = reader.option("hotstandby.etcd", args.etcd)

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("value", "topic", "cluster", "route_epoch")
        rows.write.mode("overwrite").parquet(os.path.join(args.out, f"batch={batch_id}"))

    query = (
        reader.load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", os.path.join(args.out, "_checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        query.awaitTermination(args.seconds)
    finally:
        query.stop()
        spark.stop()


if __name__ == "__main__":
    main()
