"""One Spark task's rows to a Pulsar route, through the SDK client (the Pulsar connector's sink
columns).

``value`` (binary or string, required), ``__key`` (string: the partition key), ``__topic``
(string; the ``topic`` option overrides it), ``__eventTime`` (timestamp) and
``__messageProperties`` (map of strings). One producer per topic, all with the task's identity
session (:mod:`~hotstandby.spark_integration.sink.identity`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import HotStandbyError
from hotstandby.spark_integration.sink.options import SinkOptions
from hotstandby.spark_integration.sink.result import TaskWrite, as_bytes

__all__ = ["write_rows"]


class _Acks:
    """Counts the send callbacks; remembers the first failure."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self.done = 0
        self.failures: list[str] = []

    def __call__(self, result: Any, _msg_id: Any) -> None:
        with self._cv:
            self.done += 1
            if result != pulsar.Result.Ok:
                self.failures.append(str(result))
            self._cv.notify_all()

    def wait(self, count: int, timeout_s: float) -> bool:
        with self._cv:
            return self._cv.wait_for(lambda: self.done >= count, timeout_s)


def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def write_rows(options: SinkOptions, rows: Iterator[Any], session: bytes) -> TaskWrite:
    """Send ``rows``, wait for every acknowledgement; raises (the task fails and Spark retries
    it with the same identities) when a message is refused or not acknowledged in time."""
    acks = _Acks()
    written = 0
    with ConfigCenter.open(options.settings) as center:
        client = Client(options.route, center=center, options={"hotstandby.producer.session": session.hex()},
                        **options.pulsar_client)  # fmt: skip
        try:
            producers: dict[str, Any] = {}
            for row in rows:
                fields = row.asDict()
                topic = options.topic or fields.get("__topic")
                if not topic:
                    raise HotStandbyError("a row has no topic: give a __topic column or the topic option")
                producer = producers.get(topic)
                if producer is None:
                    producer = producers[topic] = client.create_producer(
                        topic, **{"block_if_queue_full": True, **options.pulsar_producer}
                    )
                producer.send_async(
                    as_bytes(fields.get("value")) or b"",
                    acks,
                    properties=dict(fields.get("__messageProperties") or {}),
                    partition_key=fields.get("__key") or None,
                    event_timestamp=_millis(fields.get("__eventTime")),
                )
                written += 1
            deadline = time.monotonic() + options.flush_timeout_ms / 1000
            for producer in producers.values():
                producer.flush()
            if not acks.wait(written, max(deadline - time.monotonic(), 0.0)) or acks.failures:
                raise HotStandbyError(
                    f"{written - acks.done} of {written} messages not acknowledged within "
                    f"{options.flush_timeout_ms} ms, {len(acks.failures)} refused"
                    f"{': ' + acks.failures[0] if acks.failures else ''}"
                )
            resent = sum(int(getattr(p, "resent", 0)) for p in producers.values())
            return TaskWrite(rows=written, cluster=client.cluster, resent=resent)
        finally:
            client.close()
