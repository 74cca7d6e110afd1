"""Leaving a consumer group one member at a time, each when the group is settled.

When a switch moves every member of a group to another cluster, all of them leave the old
cluster's group at about the same moment, and a member leaves while the group is still
rebalancing after another one's departure. Kafka copes; the reference broker (Tansu) keeps the
departed leader of that half-formed generation, and nobody can join the group again. Leaving
in turn — under a lock in the config center, once the group is stable, releasing the lock once
the rest has settled again — costs a few seconds in the background and works everywhere.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.configcenter.lock import StoreLock
from hotstandby.documents import ClusterSpec
from hotstandby.errors import ConfigCenterError
from hotstandby.logs import get_logger
from hotstandby.probe import probe_cluster

__all__ = ["leave_in_turn"]

log = get_logger("hotstandby.kafka.consumer")

_SETTLED = {ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD}


def _settled(admin: AdminClient, spec: ClusterSpec, group: str) -> bool | None:
    """Whether the group is stable or empty; None when the cluster does not answer."""
    # Admin requests to a dead broker are what trips librdkafka's enq_once assertion (see
    # admin_clients); a plain protocol probe first keeps them away from one.
    if not probe_cluster(spec, timeout=1.0).ok:
        return None
    try:
        # The request times out on its own (2 s) before we stop waiting (10 s); the client is
        # shared and never freed (see admin_clients).
        found = admin.describe_consumer_groups([group], request_timeout=2)[group].result(10)
    except (KafkaException, TimeoutError) as exc:
        log.debug("consumer.describe_failed", group=group, error=str(exc))
        return None
    return found.state in _SETTLED


def leave_in_turn(raw: Any, *, spec: ClusterSpec, group: str, lock: StoreLock | None, timeout: float) -> None:
    """Close ``raw`` (a confluent_kafka.Consumer) once it is its turn; records it still
    fetches meanwhile are dropped unprocessed. Never waits more than ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    admin = shared_admin(spec.url)
    held = False
    try:
        if lock is not None and _settled(admin, spec, group) is not None:
            # Keep serving the group's rebalances while waiting, so the others can settle.
            while not held and time.monotonic() < deadline:
                raw.poll(0.1)
                try:
                    held = lock.try_acquire()
                except ConfigCenterError as exc:
                    log.warning("consumer.leave_lock_failed", group=group, error=str(exc))
                    break
            while held and _settled(admin, spec, group) is False and time.monotonic() < deadline:
                raw.poll(0.1)
        try:
            raw.close()
        except (KafkaException, RuntimeError) as exc:  # the old cluster may be gone
            log.warning("consumer.close_failed", group=group, error=str(exc))
        while held and _settled(admin, spec, group) is False and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        if held and lock is not None:
            lock.release()
    if time.monotonic() >= deadline:
        log.warning("consumer.leave_slow", group=group, timeout_s=timeout)
