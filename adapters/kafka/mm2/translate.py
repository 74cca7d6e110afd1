"""Kafka start positions from what MirrorMaker 2 leaves behind, in both directions.

* Forward (``A.T`` on B, the copy of A's ``T``): MM2's rule on the offset syncs — the newest
  sync at or before the group's offset; equal gives its downstream offset, ahead gives + 1.
  The same as an MM2 checkpoint, but from the group's freshest position.
* Reverse (``T`` on B, after the group consumed B's records on A as ``B.T``): the syncs of
  flow B -> A map B's offsets to ``B.T``'s on A; the newest sync whose downstream offset is at
  or before the group's position on ``B.T`` gives its upstream offset (+ 1 if the group was
  past it). Records between the sync and that are read again and filtered; none is skipped.
  MirrorMaker 2 itself has no such translation (KIP-1098 proposes one).
"""

from __future__ import annotations

from collections.abc import Iterable

from hotstandby.adapters.kafka.mm2.codec import Checkpoint, OffsetSync
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncStore
from hotstandby.failover.translation import Proposal

__all__ = ["forward", "from_checkpoints", "from_syncs", "reverse"]


def forward(store: OffsetSyncStore, topic: str, partition: int, committed: int) -> Proposal | None:
    """Position on the copy of ``topic`` for a group committed at ``committed`` on the source."""
    downstream = store.translate(topic, partition, committed)
    if downstream is None or downstream < 0:
        return None
    return Proposal(downstream, "mm2-offset-sync", f"{topic}[{partition}]@{committed} -> {downstream}")


def _current(syncs: Iterable[OffsetSync], topic: str, partition: int) -> list[OffsetSync]:
    """The syncs of ``topic``/``partition`` in the order written, since the copy's last
    downstream rewind (a recreated copy: earlier syncs describe another topic)."""
    current: list[OffsetSync] = []
    for sync in syncs:
        if sync.topic != topic or sync.partition != partition:
            continue
        if current and sync.downstream_offset < current[-1].downstream_offset:
            current = []
        current.append(sync)
    return current


def _newest_at_or_before(
    syncs: Iterable[OffsetSync], topic: str, partition: int, position: int, *, on_copy: bool
) -> int | None:
    """The one rule of both directions: the newest sync whose offset on the side the position
    is on (the copy's downstream offset, or the source's upstream one) is at or before
    ``position``; its offset on the other side, + 1 when the position is past the sync."""

    def side(sync: OffsetSync) -> int:
        return sync.downstream_offset if on_copy else sync.upstream_offset

    def other(sync: OffsetSync) -> int:
        return sync.upstream_offset if on_copy else sync.downstream_offset

    before = [sync for sync in _current(syncs, topic, partition) if side(sync) <= position]
    if not before:
        return None
    best = max(reversed(before), key=side)  # ties: the newest
    return other(best) + (0 if side(best) == position else 1)


def from_syncs(syncs: Iterable[OffsetSync], topic: str, partition: int, committed: int) -> Proposal | None:
    """Position on the copy of ``topic`` for a group at ``committed`` on the source, from every
    sync of the flow in the order written (MM2's rule, without its 64-slot thinning): the newest
    sync at or before ``committed``; equal gives its downstream offset, ahead gives + 1. A
    downstream rewind (the copy was recreated) forgets the syncs before it."""
    downstream = _newest_at_or_before(syncs, topic, partition, committed, on_copy=False)
    if downstream is None:
        return None
    return Proposal(downstream, "mm2-offset-sync", f"{topic}[{partition}]@{committed} -> {downstream}")


def reverse(syncs: Iterable[OffsetSync], topic: str, partition: int, position_on_copy: int) -> Proposal | None:
    """Position on ``topic`` (the original) for a group at ``position_on_copy`` on its copy.

    ``syncs`` are the flow's offset syncs for ``topic``/``partition`` in the order written.
    Syncs are read in order and a downstream rewind (the copy was recreated) forgets older ones.
    """
    upstream = _newest_at_or_before(syncs, topic, partition, position_on_copy, on_copy=True)
    if upstream is None:
        return None
    return Proposal(upstream, "mm2-reverse-sync", f"copy@{position_on_copy} -> {topic}[{partition}]@{upstream}")


def from_checkpoints(checkpoints: Iterable[Checkpoint], group: str, topic: str, partition: int) -> Proposal | None:
    """The newest MM2 checkpoint of ``group`` for ``topic``/``partition`` (target names)."""
    found: Checkpoint | None = None
    for cp in checkpoints:
        if (cp.group, cp.topic, cp.partition) == (group, topic, partition):
            found = cp  # the topic is written in order: the last one is the newest
    if found is None or found.downstream_offset < 0:
        return None
    return Proposal(
        found.downstream_offset, "mm2-checkpoint", f"{group} {topic}[{partition}] upstream {found.upstream_offset}"
    )
