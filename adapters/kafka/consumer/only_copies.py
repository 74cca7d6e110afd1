"""Which remote copies on the cluster a consumer leaves hold records the cluster it moves to has
lost: what a failback to a cluster that came back empty must read before it moves.

MirrorMaker 2 copies ``orders`` of kafka-a to ``kafka-a.orders`` on kafka-b, and nothing of that
copy back. When kafka-a comes back empty (or with a shorter log), the records of its
``orders`` that the group had not read are only in ``kafka-a.orders`` on kafka-b. A copy holds
them when its partition ends past the end of the original's partition on the destination
(MM2 copies record by record, so a copy that ran from the start is as long as its original): a
destination that lost its log ends before. A copy that started later, or a destination that
has grown again since, may hide a loss; MM2 copying a record twice (a restart) makes a copy
look longer, which only costs reading it to its end.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.adapters.kafka.consumer.state import Slot, log
from hotstandby.configcenter.documents import ClusterSpec, Link

__all__ = ["copies_only_here"]

_ASK_TIMEOUT_S = 5.0


def copies_only_here(
    ends: Mapping[Slot, int], logical: Mapping[str, str], destination: ClusterSpec, link: Link | None
) -> set[Slot]:
    """The slots of ``ends`` (partitions read here and where they end) that are copies of
    ``destination``'s topics holding records the destination no longer has. ``logical``:
    physical -> logical topic here; ``link``: how ``destination`` replicates here. A destination
    that does not answer holds nothing as far as a drain is concerned."""
    if link is None or link.policy != "prefix":
        return set()
    prefix = f"{destination.name}{link.separator}"
    copies = {slot: end for slot, end in ends.items() if slot[0].startswith(prefix) and end > 0}
    if not copies:
        return set()
    originals = {slot: TopicPartition(logical.get(slot[0], slot[0][len(prefix) :]), slot[1]) for slot in copies}
    there = _ends(destination, list(originals.values()))
    found = {slot for slot, end in copies.items() if there.get(originals[slot], 0) < end}
    if found:
        log.warning(
            "consumer.copies_only_here",
            cluster=destination.name,
            partitions=len(found),
            records=sum(copies[s] - there.get(originals[s], 0) for s in found),
        )
    return found


def _ends(spec: ClusterSpec, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """Where ``partitions`` end on ``spec``'s cluster; a partition that does not exist or does
    not answer is left out."""
    admin = shared_admin(spec)
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # untyped in confluent-kafka
    try:
        futures = admin.list_offsets({tp: latest for tp in partitions}, request_timeout=_ASK_TIMEOUT_S)
    except KafkaException:
        return {}
    out: dict[TopicPartition, int] = {}
    for tp, future in futures.items():
        try:
            out[TopicPartition(tp.topic, tp.partition)] = future.result(_ASK_TIMEOUT_S).offset
        except (KafkaException, TimeoutError):
            continue
    return out
