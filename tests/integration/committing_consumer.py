"""A consumer process for the crash tests: a poll loop hands records to a worker thread, which
commits what it processed, partition by partition — the usual shape of an application that
processes while it keeps polling.

Usage: ``python committing_consumer.py CONFIG_JSON TOPIC OUT_FD``. It writes to ``OUT_FD``, one
line each, ``H <partition> <offset> <value>`` once ``poll`` returned a record, ``C <partition>
<offset>`` once ``commit(message=..., asynchronous=False)`` of that record returned (covering
the partition's earlier records), and ``A``/``R`` with the partitions assigned/revoked. Polls
and commits take turns under one lock, so the lines are in the order things happened and a
SIGKILL finds everything written done. It runs until its stdin is closed, then commits what is
left, closes the consumer and writes ``closed``. SDK logs go to stderr.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from confluent_kafka import Message, TopicPartition

from hotstandby.adapters.kafka import Consumer
from hotstandby.logs import configure

PROCESSING_S = 0.1


def commit_processed(consumer: Consumer, todo: queue.Queue[Message], turn: threading.Lock, out: IO[str]) -> None:
    """Take what was handed out, process it, then commit the last record of each partition."""
    while True:
        batch = [todo.get()]
        time.sleep(PROCESSING_S)  # the application's work on the batch
        while not todo.empty():
            batch.append(todo.get())
        last = {m.partition() or 0: m for m in batch if m is not None}
        with turn:
            for partition, msg in sorted(last.items()):
                consumer.commit(message=msg, asynchronous=False)
                out.write(f"C {partition} {msg.offset()}\n")
        if None in batch:
            return


def main() -> None:
    config, topic, out_fd = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    configure("info", json=True)
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()  # returns at EOF: the parent closed the pipe
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    with os.fdopen(out_fd, "w", buffering=1) as out:
        consumer = Consumer(config)

        def report(kind: str) -> Callable[[object, list[TopicPartition]], None]:
            def write(_consumer: object, parts: list[TopicPartition]) -> None:
                out.write(f"{kind} {','.join(str(tp.partition) for tp in parts)}\n")

            return write

        consumer.subscribe([topic], on_assign=report("A"), on_revoke=report("R"))
        todo: queue.Queue[Message] = queue.Queue()
        turn = threading.Lock()
        worker = threading.Thread(target=commit_processed, args=(consumer, todo, turn, out))
        worker.start()
        while not stop.is_set():
            with turn:
                msg = consumer.poll(0.1)
                if msg is None or msg.error() is not None:
                    continue
                out.write(f"H {msg.partition()} {msg.offset()} {msg.value().decode()}\n")
            todo.put(msg)
        todo.put(None)  # type: ignore[arg-type]  # the end
        worker.join()
        consumer.close()
        out.write("closed\n")


if __name__ == "__main__":
    main()
