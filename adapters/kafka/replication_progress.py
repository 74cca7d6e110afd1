"""How far replication got, read where MirrorMaker 2 keeps it, to trim the producer's replay window.

MM2's source connector stores its position per source partition on the *target* cluster, in
``mm2-offsets.<source>.internal`` (Kafka Connect's source offsets; the reference replicator
writes the same records): the last upstream offset copied **and acknowledged** by the target.
That topic lives on the cluster a producer moves to, so it can be read even when the source
is dead.

A record the source acknowledged at offset ``o`` of ``T[p]`` is replicated when the newest
position for ``T[p]`` is at least ``o``. Offsets alone cannot tell a source that came back
empty (and counts from zero again) from the one that acknowledged the record, so a position
is trusted only when written after the record was acknowledged, by more than the clock-skew
margin: a position written before the source restarted is older than every record the
restarted source acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException

from hotstandby.adapters.kafka.mm2.progress import decode_progress
from hotstandby.adapters.kafka.read_partition import read_to_end
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.logs import get_logger

__all__ = ["Position", "StoredRecord", "progress_topic", "read_positions", "replicated"]

log = get_logger("hotstandby.kafka.replication_progress")


@dataclass(frozen=True, slots=True)
class Position:
    """The last upstream offset replicated for one source partition, and when it was written."""

    offset: int
    written_ms: int


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """Where a cluster acknowledged a record: topic, partition, offset, and when (wall clock)."""

    topic: str
    partition: int
    offset: int
    acked_ms: int


def progress_topic(link: Link) -> str:
    return f"mm2-offsets{link.separator}{link.source}{link.separator}internal"


def read_positions(target: ClusterSpec, link: Link, *, timeout: float) -> dict[tuple[str, int], Position]:
    """Replication positions of ``link`` (source -> ``target``), read on ``target``; empty when
    the topic is missing or does not answer within ``timeout`` (nothing is trimmed then)."""
    config = {**target.client_config("consumer"), "bootstrap.servers": target.url, "group.id": "__hotstandby-lookup"}
    out: dict[tuple[str, int], Position] = {}
    try:
        records = read_to_end(config, progress_topic(link), timeout=timeout)
    except (KafkaException, TimeoutError) as exc:  # a lookup that fails trims nothing
        log.info("replication_progress.unavailable", link=f"{link.source}->{link.target}", error=str(exc))
        return out
    for msg in records:
        decoded = decode_progress(msg.key() or b"", msg.value(), link.source)
        if decoded is None:
            continue
        tp, offset = decoded
        if offset is None:
            out.pop(tp, None)
        else:
            out[tp] = Position(offset, msg.timestamp()[1])
    return out


def replicated(record: StoredRecord, positions: dict[tuple[str, int], Position], *, skew_ms: int) -> bool:
    """Whether the positions prove ``record`` replicated (see the module doc)."""
    position = positions.get((record.topic, record.partition))
    return position is not None and record.offset <= position.offset and record.acked_ms + skew_ms < position.written_ms
