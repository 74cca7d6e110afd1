"""Whether a cluster the producer moves back to still holds what it acknowledged before.

A switch re-sends the replay window to the new cluster; a record the producer had sent to that
cluster before (a switch away re-sent it elsewhere) need not go again when the cluster still
has it at the offset it acknowledged. The proof is the partition's watermarks there: its log
starts at or before the lowest such offset and ends after the highest. A partition whose log
is shorter (the cluster came back empty, or lost the tail in an unclean leader election)
proves nothing, and its records are sent again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.outbox import Stored
from hotstandby.logs import get_logger

__all__ = ["Held", "still_held"]

log = get_logger("hotstandby.kafka.producer")

Slot = tuple[str, int]
#: Whether the cluster a switch moves to still holds a record stored there before.
Held = Callable[[Stored], bool]


def still_held(target: ClusterSpec, slots: Mapping[Slot, tuple[int, int]], *, timeout: float) -> Held | None:
    """A check for :meth:`~hotstandby.failover.outbox.Outbox.replay`: whether ``target`` still
    holds a record it acknowledged, for the partitions of ``slots`` (lowest and highest offset
    acknowledged there) whose watermarks cover them, read within ``timeout``. None when there
    is nothing to check."""
    if not slots:
        return None
    logs: dict[Slot, tuple[int, int]] = {}  # watermarks of the partitions that cover their records
    config = {**target.client_config("consumer"), "bootstrap.servers": target.url,
              "group.id": "__hotstandby-lookup", "enable.auto.commit": False}  # fmt: skip
    consumer = Consumer(with_logger(config))
    deadline = time.monotonic() + timeout
    try:
        for (topic, partition), (lowest, highest) in slots.items():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=left)
            if low <= lowest and highest < high:
                logs[(topic, partition)] = (low, high)
    except KafkaException as exc:  # what was not checked is sent again
        log.info("producer.held_unknown", cluster=target.name, error=str(exc))
    finally:
        consumer.close()
    name = target.name

    def held(stored: Stored) -> bool:
        # By offset too: a record acknowledged there before may enter the window after the check.
        low, high = logs.get((stored.topic, stored.partition), (0, 0))
        return stored.cluster == name and low <= stored.lowest and stored.offset < high

    return held
