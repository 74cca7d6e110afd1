"""The identity session of a sink task's rows.

A row's ``hs-id`` is (session, partition, sequence), the sequence counted per topic partition
by the task's producer. The session is derived from what names the rows' place in the
pipeline — the streaming query's id (kept in its checkpoint) or the batch write's id, the
micro-batch id and the task's Spark partition — so a task written again (a retried task, a
micro-batch run again after a driver restart, the rest of a batch after a flip) writes the
same rows with the same identities, provided it writes the same rows in the same order (a
replayable source and deterministic transformations: Spark's condition for exactly-once
sinks). Consumers of the SDK and the hotstandby source drop the copies.
"""

from __future__ import annotations

import hashlib

__all__ = ["BATCH_ID", "QUERY_ID", "task_session"]

#: The local properties Spark gives a streaming query's tasks.
QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"


def task_session(write: str, batch: int, partition: int) -> bytes:
    """The 16-byte session of task ``partition`` of micro-batch ``batch`` of ``write``."""
    digest = hashlib.sha256(f"hotstandby-sink\x00{write}\x00{batch}\x00{partition}".encode()).digest()
    return digest[:16]
