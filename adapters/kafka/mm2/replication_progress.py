"""How far replication got, read where MirrorMaker 2 keeps it, to trim the producer's replay window.

MM2's source connector stores its position per source partition on the *target* cluster, in
``mm2-offsets.<source>.internal`` (Kafka Connect's source offsets, 25 partitions by default,
every partition read; the reference replicator writes the same records): the last upstream offset copied **and acknowledged** by the target.
That topic lives on the cluster a producer moves to, so it can be read even when the source
is dead.

The producer's outbox decides with these positions which window records replication copied
(:func:`hotstandby.failover.outbox.replicated`).
"""

from __future__ import annotations

from confluent_kafka import KafkaException

from hotstandby.adapters.kafka.mm2.progress import decode_progress
from hotstandby.adapters.kafka.mm2.read_partition import read_every_partition
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.failover.outbox import ReplicatedTo
from hotstandby.logs import get_logger

__all__ = ["progress_topic", "read_positions"]

log = get_logger("hotstandby.kafka.replication_progress")


def progress_topic(link: Link) -> str:
    return f"mm2-offsets{link.separator}{link.source}{link.separator}internal"


def read_positions(target: ClusterSpec, link: Link, *, timeout: float) -> dict[tuple[str, int], ReplicatedTo]:
    """Replication positions of ``link`` (source -> ``target``), read on ``target``; empty when
    the topic is missing or does not answer within ``timeout`` (nothing is trimmed then)."""
    config = {**target.client_config("consumer"), "bootstrap.servers": target.url, "group.id": "__hotstandby-lookup"}
    out: dict[tuple[str, int], ReplicatedTo] = {}
    try:
        records = read_every_partition(config, progress_topic(link), timeout=timeout)
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
            out[tp] = ReplicatedTo(offset, msg.timestamp()[1])
    return out
