"""The Spark drill's streaming job, a program (``hotstandby.drill.spark`` starts it)::

    python -m hotstandby.drill.spark_job --etcd HOST:PORT --namespace NS --route ROUTE \\
        --group G --checkpoint DIR --sink DIR --option KEY=VALUE [--option KEY=VALUE ...] [--master URL]

A Spark session (``local[2]``, or ``--master spark://HOST:PORT``; loopback only) runs one streaming query over the
``hotstandby`` source, from the earliest records, a micro-batch every 500 ms; the ``--option``
pairs say what it reads (a Kafka route: ``subscribe=T``, ``maxOffsetsPerTrigger=N``; a Pulsar
route: ``topic=persistent://...``). Its ``foreachBatch`` sink keeps the ``value`` and
``cluster`` columns (both kinds have them) and writes batch ``id`` to ``<sink>/batch-<id>.json`` —
``{"batch": id, "rows": [[value, cluster], ...]}``, rows sorted — through a temporary file and
:func:`os.replace`: a reader never sees half a file, and a batch that Spark runs again after a
restart overwrites its own file (an idempotent sink).

``--topic T [--max-offsets N]`` (a Kafka route's ``subscribe=T``, ``maxOffsetsPerTrigger=N``,
default 2000) is what drills of older versions pass; still accepted, as this program is found
through the installed package, which may be newer than the drill that starts it.

``--write-topic T`` makes it a pipeline: the query's rows, their value parsed as a number and
written back as text (a transformation on the way), go to topic ``T`` of the same route through
the ``hotstandby`` sink instead of the files.

It runs until SIGTERM or SIGINT (the query and the session are stopped; exit status 0) or
until the query fails (exit status 1, the error on stderr). Nothing is printed on stdout: the
job's output and that of Spark's JVM go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from hotstandby.spark_integration import FORMAT
from hotstandby.spark_integration.local_session import local_session

__all__ = ["main"]

TRIGGER = "500 milliseconds"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hotstandby.drill.spark_job", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--etcd", required=True, metavar="HOST:PORT")
    p.add_argument("--namespace", required=True)
    p.add_argument("--route", required=True)
    p.add_argument("--group", required=True, help="the query's ledger (hotstandby.group)")
    p.add_argument("--checkpoint", required=True, type=Path, metavar="DIR")
    p.add_argument("--sink", required=True, type=Path, metavar="DIR")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--option", action="append", type=_option, metavar="KEY=VALUE",
                      help="a source option (repeated): subscribe=T and maxOffsetsPerTrigger=N, or topic=T")  # fmt: skip
    what.add_argument("--topic", help="a Kafka route's topic: subscribe=TOPIC with --max-offsets (older drills)")
    p.add_argument("--max-offsets", type=int, default=2000, metavar="N", help="with --topic: maxOffsetsPerTrigger")
    p.add_argument("--master", help="a Spark master URL (spark://HOST:PORT); default local[2]")
    p.add_argument("--write-topic", metavar="T", help="write to topic T of the route (the hotstandby sink)")
    return p


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The source options the command line asks for."""
    if args.topic is not None:
        return {"subscribe": args.topic, "maxOffsetsPerTrigger": str(args.max_offsets)}
    return dict(args.option)


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def write_batch(sink: Path, batch_id: int, rows: list[list[Any]]) -> Path:
    """Write one batch's file atomically (a temporary file, then :func:`os.replace`)."""
    path = sink / f"batch-{batch_id}.json"
    temporary = sink / f".batch-{batch_id}.json.tmp"
    temporary.write_text(json.dumps({"batch": batch_id, "rows": sorted(rows)}))
    os.replace(temporary, path)
    return path


def _sink(directory: Path) -> Callable[[DataFrame, int], None]:
    def write(batch: DataFrame, batch_id: int) -> None:
        rows = [[None if r.value is None else bytes(r.value).decode(), r.cluster]
                for r in batch.select("value", "cluster").collect()]  # fmt: skip
        write_batch(directory, batch_id, rows)

    return write


def _pipeline(stream: DataFrame, args: argparse.Namespace, options: dict[str, str]) -> Any:
    """The source's rows, transformed, to ``--write-topic`` through the hotstandby sink."""
    key = "__key" if "__key" in stream.columns else "key"  # a Pulsar route's column, or Kafka's
    shaped = stream.selectExpr("CAST(CAST(CAST(value AS STRING) AS BIGINT) AS STRING) AS value", key)
    etcd = {k: v for k, v in options.items() if k.startswith("hotstandby.etcd")}  # TLS, credentials
    return (shaped.writeStream.format(FORMAT).options(**etcd).option("hotstandby.route", args.route)
            .option("hotstandby.etcd", args.etcd).option("hotstandby.namespace", args.namespace)
            .option("topic", args.write_topic))  # fmt: skip


def _report_progress(progress: Any, reported: Any) -> Any:
    """A line on stderr for each micro-batch: what a slow or stalled drill needs explained."""
    if progress is None or progress.batchId == reported or "addBatch" not in progress.durationMs:
        return reported  # nothing new, or a trigger without data
    print(f"spark_job: batch {progress.batchId} rows {progress.numInputRows} {progress.timestamp} "
          f"ms {json.dumps(progress.durationMs, sort_keys=True)}", file=sys.stderr, flush=True)  # fmt: skip
    return progress.batchId


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.dup2(2, 1)  # stdout is stderr from here on, for the JVM (it inherits fd 1) too
    sys.stdout = sys.stderr
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    args.sink.mkdir(parents=True, exist_ok=True)
    spark = local_session("hotstandby-drill", master=args.master)
    failure = ""
    try:
        options = source_options(args)
        stream = (
            spark.readStream.format(FORMAT)
            .option("hotstandby.route", args.route)
            .option("hotstandby.etcd", args.etcd)
            .option("hotstandby.namespace", args.namespace)
            .option("hotstandby.group", args.group)
            .option("startingOffsets", "earliest")
            .options(**options)
            .load()
        )
        if args.write_topic is None:
            writer = stream.writeStream.foreachBatch(_sink(args.sink))
        else:
            writer = _pipeline(stream, args, options)
        query = writer.option("checkpointLocation", str(args.checkpoint)).trigger(processingTime=TRIGGER).start()
        try:
            reported = None
            while not stop.is_set() and not failure:
                if query.awaitTermination(1):  # raises if the query failed
                    failure = "the query stopped by itself"
                reported = _report_progress(query.lastProgress, reported)
        finally:
            query.stop()
    except Exception as exc:
        failure = f"the query failed: {exc}"
    finally:
        spark.stop()
    if failure:  # last, so that it ends the log
        print(f"spark_job: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
