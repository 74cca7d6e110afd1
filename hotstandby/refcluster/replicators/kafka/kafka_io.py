"""Small confluent-kafka helpers the replicator needs: topic creation, record coordinates,
turning delivery failures into exceptions, and closing a consumer without hanging."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]

from hotstandby.adapters.kafka.consumer.raw_close import close_within
from hotstandby.logs import get_logger

log = get_logger("hotstandby.replicator")

__all__ = ["ReplicationError", "close_consumer", "coordinates", "ensure_topics", "flush"]

_CLOSE_TIMEOUT_S = 5.0


class ReplicationError(RuntimeError):
    """A step of the flow failed; the flow retries it from its last committed progress."""


def close_consumer(consumer: Any, group: str) -> None:
    """Close ``consumer``, waiting at most 5 s (the rest of the close goes on in the
    background): librdkafka's close can hang for good on a client that lived through its
    broker's death, seen after the replicator was stopped (SIGSTOP) across it."""
    with contextlib.suppress(KafkaException, RuntimeError):
        consumer.unassign()  # assigned by hand: nothing for the close to wait for
    close_within(consumer, group, _CLOSE_TIMEOUT_S)


def coordinates(msg: Message) -> tuple[str, int, int]:
    """Topic, partition and offset of a consumed record (always set for one without error)."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if topic is None or partition is None or offset is None:
        raise ReplicationError(f"record without topic/partition/offset: {topic}, {partition}, {offset}")
    return topic, partition, offset


def _result(futures: dict[str, Any], timeout: float, ignore: tuple[int, ...]) -> None:
    for name, fut in futures.items():
        try:
            fut.result(timeout)
        except TimeoutError:
            raise ReplicationError(f"{name}: no answer within {timeout} s") from None
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() in ignore:
                continue
            raise ReplicationError(f"{name}: {exc}") from exc


def flush(producer: Producer, timeout: float, stop: threading.Event) -> int:
    """``producer.flush`` in short slices, so a stop request (SIGTERM) is not held up by a dead
    broker; returns the number of messages still unacknowledged."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = int(producer.flush(min(0.5, max(deadline - time.monotonic(), 0.0))))
        if remaining == 0 or stop.is_set() or time.monotonic() >= deadline:
            return remaining


def ensure_topics(
    admin: AdminClient, wanted: dict[str, int], *, compacted: Iterable[str] = (), timeout: float = 10.0
) -> None:
    """Create missing topics with the given partition counts; add partitions where there are fewer."""
    existing = {t: len(md.partitions) for t, md in admin.list_topics(timeout=timeout).topics.items()}
    compact = set(compacted)
    new = [
        NewTopic(
            t, num_partitions=n, replication_factor=1, config={"cleanup.policy": "compact"} if t in compact else {}
        )
        for t, n in wanted.items()
        if t not in existing
    ]
    if new:
        _result(admin.create_topics(new, operation_timeout=timeout), timeout, (KafkaError.TOPIC_ALREADY_EXISTS,))
    grow = [NewPartitions(t, n) for t, n in wanted.items() if t in existing and existing[t] < n]
    if grow:
        try:
            _result(admin.create_partitions(grow), timeout, (KafkaError.INVALID_PARTITIONS,))
        except ReplicationError as exc:
            # Some brokers (Tansu) cannot add partitions. Records for the missing partitions
            # then fail to copy and are retried, with the error in the flow's status.
            log.warning("replicator.partitions_not_added", topics=[g.topic for g in grow], error=str(exc))
