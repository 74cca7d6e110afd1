"""What a Pulsar producer's switch waits for: the old cluster's acknowledgements (a flush
bounded by the drain timeout) and geo-replication's copies of the replay window on the new
cluster (what proves a window message there, so it is not sent again as a twin of its copy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pulsar

from hotstandby.adapters.pulsar.producer.replication_position import copied_through, own_copies
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.outbox import ReplicatedTo, Stored, replicated
from hotstandby.logs import get_logger

__all__ = ["flush_within", "replication_positions"]

log = get_logger("hotstandby.pulsar.producer")

_POSITIONS_BUDGET_S = 1.0  # a switch's look for replication's position, at most (for all partitions)
_REPLICATION_STALLED_S = 1.5  # a planned switch stops waiting for copies that long without progress


def replication_positions(
    client: pulsar.Client,
    topic: str,
    partition_names: list[str],
    source: str,
    *,
    session: bytes,
    sent_only_there: Callable[[], dict[tuple[int, int], Stored]],
    drain_s: float,
    skew_ms: int,
    only_other: bool,
    wait: bool,
) -> dict[tuple[str, int], ReplicatedTo]:
    """What the new cluster (``client``) shows copied from ``source`` of ``topic``.
    ``sent_only_there()``: the window messages acknowledged by ``source`` only (never re-sent:
    no other cluster holds them). With ``wait`` (the source answered the drain, so replication
    from it goes on), look again within ``drain_s`` until those are all proven copied, or the
    new cluster proves nothing at all (pulsar-lite), or replication has not moved on for a
    while (stuck: waiting longer spares nothing). ``only_other``: the route has two clusters."""
    found: dict[tuple[str, int], ReplicatedTo] = {}
    progress = [time.monotonic()]  # when replication was last seen to move on

    def look() -> bool:
        """Whether to stop looking (see above)."""
        before = dict(found)
        found.update(
            copied_through(
                client,
                topic,
                partition_names,
                source,
                budget_s=min(_POSITIONS_BUDGET_S, drain_s),
                only_other=only_other,
                ours=own_copies(session, sent_only_there),
            )
        )
        if found != before:
            progress[0] = time.monotonic()
        return (
            not found
            or time.monotonic() - progress[0] > _REPLICATION_STALLED_S
            or all(replicated(stored, source, found, skew_ms) for stored in sent_only_there().values())
        )

    # Waiting (within the drain timeout) for the copies spares re-sent twins, which consumers
    # of different processes could each hand out.
    if wait:
        wait_until(look, drain_s, first=0.02, most=0.2)
    else:
        look()
    return found


def flush_within(producer: pulsar.Producer, timeout: float) -> None:
    """Flush ``producer``, waiting ``timeout`` s at most: pulsar's flush has no timeout, so it
    runs aside, and the switch goes on after the wait."""
    flusher = threading.Thread(target=_flush_quietly, args=(producer,), daemon=True, name="hotstandby-drain")
    flusher.start()
    flusher.join(timeout)


def _flush_quietly(producer: pulsar.Producer) -> None:
    try:
        producer.flush()
    except pulsar.PulsarException as exc:
        log.info("producer.drain_flush_failed", error=str(exc))
