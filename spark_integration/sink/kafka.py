"""One Spark task's rows to a Kafka route, through the SDK producer (Spark's Kafka sink columns).

``value`` (binary or string, required), ``key`` (binary or string), ``topic`` (string; the
``topic`` option overrides it), ``partition`` (int; none or null: the SDK's partitioner) and
``headers`` (array of (key string, value binary)). The producer's identity session is the
task's (:mod:`~hotstandby.spark_integration.sink.identity`): the same rows written again, in
the same order, get the same identities.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import HotStandbyError
from hotstandby.spark_integration.sink.options import SinkOptions
from hotstandby.spark_integration.sink.result import TaskWrite, as_bytes

__all__ = ["write_rows"]

_FULL_QUEUE_WAIT_S = 0.1  # a full producer queue: serve deliveries this long, then try again


def write_rows(options: SinkOptions, rows: Iterator[Any], session: bytes) -> TaskWrite:
    """Produce ``rows``, wait for every acknowledgement; raises (the task fails and Spark
    retries it with the same identities) when a record is refused or not acknowledged in time."""
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    written = 0
    with ConfigCenter.open(options.settings) as center:
        producer = Producer({**options.kafka, "hotstandby.route": options.route,
                             "hotstandby.producer.session": session.hex()}, center=center)  # fmt: skip
        try:
            for row in rows:
                fields = row.asDict()
                topic = options.topic or fields.get("topic")
                if not topic:
                    raise HotStandbyError("a row has no topic: give a topic column or the topic option")
                partition = fields.get("partition")
                value, key = as_bytes(fields.get("value")), as_bytes(fields.get("key"))
                headers = [(h["key"], as_bytes(h["value"])) for h in fields.get("headers") or ()]
                full_until = None  # a queue that stays full as long as a flush may take: the task fails
                while True:
                    try:
                        producer.produce(topic, value, key, -1 if partition is None else int(partition),
                                         on_delivery=delivered, headers=headers)  # fmt: skip
                        break
                    except BufferError as refused:
                        full_until = full_until or time.monotonic() + options.flush_timeout_ms / 1000
                        if time.monotonic() > full_until:
                            raise HotStandbyError(
                                f"the producer took no record for {options.flush_timeout_ms} ms: {refused}"
                            ) from None
                        producer.poll(_FULL_QUEUE_WAIT_S)
                written += 1
            left = producer.flush(options.flush_timeout_ms / 1000)  # across switches, within the timeout
            if left or failures:
                raise HotStandbyError(
                    f"{left} of {written} records not acknowledged within {options.flush_timeout_ms} ms, "
                    f"{len(failures)} refused{': ' + failures[0] if failures else ''}"
                )
            return TaskWrite(rows=written, cluster=producer.cluster, resent=producer.resent, switches=producer.switches)
        finally:
            producer.close()
