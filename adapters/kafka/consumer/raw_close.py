"""Closing a raw confluent_kafka.Consumer without hanging, and without waiting too long.

librdkafka (confluentinc/librdkafka#4884) hangs for good when an assignment reaches the
rebalance callback while the consumer closes: confluent-kafka answers it with an assign that
the terminating group never serves, and holds the GIL meanwhile, so the whole process stops.
An assignment can arrive during close whenever a rebalance is under way — another member
joining or leaving, a metadata refresh that found a new topic. So the consumer first
unsubscribes (it leaves the group: nothing more will be assigned), the revoke and any
assignment still queued are served while the group is not terminating, and only an idle
consumer is closed.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import KafkaException

from hotstandby.configcenter.polling import wait_until
from hotstandby.logs import get_logger

__all__ = ["close_within", "quiesce"]

log = get_logger("hotstandby.kafka.consumer")

# How long to serve the revoke after unsubscribing; it is local, the broker is not asked.
_QUIESCE_S = 2.0


def quiesce(raw: Any, timeout: float = _QUIESCE_S) -> bool:
    """Unsubscribe ``raw`` and serve its rebalance events until nothing is assigned (records
    fetched meanwhile are dropped: another member, or this one on another cluster, reads them
    again); a manual assignment is dropped too. True when ``raw`` was left idle."""

    def unassigned() -> bool:
        raw.poll(0.05)
        return not raw.assignment()

    try:
        raw.unsubscribe()
        if not wait_until(unassigned, timeout, first=0.0, most=0.0):
            raw.unassign()  # a manual assignment: no rebalance takes it away
        return not raw.assignment()
    except (KafkaException, RuntimeError) as exc:  # closed already, or the handle is gone
        log.debug("consumer.quiesce_failed", error=str(exc))
        return False


def close_within(raw: Any, group: str, timeout: float) -> bool:
    """Close ``raw`` (a confluent_kafka.Consumer) once idle (:func:`quiesce`), waiting at most
    ``timeout`` s; True when it closed. librdkafka's close waits for the commits it has in
    flight (up to ``session.timeout.ms`` when the coordinator is gone): the rest of it goes on
    in a daemon thread."""
    closing = threading.Thread(target=_close, args=(raw, group), name="hotstandby-kafka-close", daemon=True)
    closing.start()
    closing.join(timeout)
    if closing.is_alive():
        log.info("consumer.closing_in_background", group=group, waited_s=timeout)
        return False
    return True


def _close(raw: Any, group: str) -> None:
    quiesce(raw)
    try:
        raw.close()
    except (KafkaException, RuntimeError) as exc:  # the old cluster may be gone
        log.warning("consumer.close_failed", group=group, error=str(exc))
