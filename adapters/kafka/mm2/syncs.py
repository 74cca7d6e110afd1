"""Offset syncs: when MM2 emits them, and how MM2 keeps and uses them for translation.

:class:`OffsetSyncEmitter` follows MM2's source task: a sync is sent at once for the first
record of a partition in a task's lifetime, when the last sync is ``offset.lag.max`` or more
behind, when an upstream offset was skipped, or when the downstream offset went back;
otherwise the newest position is held back and sent at the next periodic commit.

:class:`OffsetSyncStore` follows MM2's checkpoint task: 64 syncs per partition, the newest in
slot 0 and older ones spaced so that slot ``j`` is at most about ``2^j`` offsets behind slot 0
(invariant B) and neighbours are at least ``2^(i-2)`` apart (invariant C). Translation uses
the newest kept sync at or before the committed offset: equal gives its downstream offset,
ahead gives downstream + 1; a sync after the offset gives -1 (too old to translate); no
sync gives nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from hotstandby.adapters.kafka.mm2.codec import OffsetSync

__all__ = ["OFFSET_LAG_MAX_DEFAULT", "SLOTS", "OffsetSyncEmitter", "OffsetSyncStore"]

OFFSET_LAG_MAX_DEFAULT = 100
SLOTS = 64
TopicPartition = tuple[str, int]


@dataclass
class _PartitionState:
    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1

    def sync_now(self, upstream: int, downstream: int, max_lag: int) -> bool:
        first = self.last_sync_downstream == -1
        # Translation lands one past the last sync, hence the +1.
        stale = downstream - (self.last_sync_downstream + 1) >= max_lag
        skipped = upstream - self.previous_upstream != 1
        truncated = downstream < self.previous_downstream
        now = first or stale or skipped or truncated
        if now:
            self.last_sync_downstream = downstream
        self.previous_upstream, self.previous_downstream = upstream, downstream
        return now


class OffsetSyncEmitter:
    """Decides which offset syncs to write, one task lifetime at a time."""

    def __init__(self, max_offset_lag: int = OFFSET_LAG_MAX_DEFAULT) -> None:
        self.max_offset_lag = max_offset_lag
        self._states: dict[TopicPartition, _PartitionState] = {}
        self._due: list[OffsetSync] = []  # in the order they arose: MM2 sends each at once
        self._delayed: dict[TopicPartition, OffsetSync] = {}

    def record_written(self, topic: str, partition: int, upstream: int, downstream: int) -> None:
        """The record at ``upstream`` on the source is at ``downstream`` on the target (acknowledged)."""
        tp = (topic, partition)
        sync = OffsetSync(topic, partition, upstream, downstream)
        if self._states.setdefault(tp, _PartitionState()).sync_now(upstream, downstream, self.max_offset_lag):
            self._delayed.pop(tp, None)
            self._due.append(sync)
        else:
            self._delayed[tp] = sync

    def forget(self, topic: str, partition: int) -> None:
        """The source partition was re-created: its offsets start again, so does its sync state."""
        self._states.pop((topic, partition), None)
        self._delayed.pop((topic, partition), None)

    def promote_delayed(self) -> None:
        """The periodic commit: held-back positions become due, so idle topics do not lag."""
        self._due.extend(self._delayed.values())
        self._delayed.clear()

    def take_pending(self) -> list[OffsetSync]:
        """Syncs due to be written now, oldest first, removed from the queue."""
        due, self._due = self._due, []
        return due

    def requeue(self, syncs: list[OffsetSync]) -> None:
        """Put back syncs whose write failed, ahead of newer ones (the store expects order)."""
        self._due = list(syncs) + self._due


def _wrap64(value: int) -> int:
    """Java long arithmetic: MM2's bounds rely on its wrap-around near 2^63."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _recent_enough(newer: OffsetSync, older: OffsetSync, i: int, j: int) -> bool:
    """Invariant B between slots i < j."""
    if newer is older:
        return True
    bound = _wrap64(_wrap64(older.upstream_offset + _wrap64(1 << j)) - _wrap64(1 << i))
    return bound < 0 or newer.upstream_offset <= bound


def _far_enough(newer: OffsetSync, older: OffsetSync, i: int) -> bool:
    """Invariant C between slot i and a later slot."""
    if newer is older:
        return True
    bound = _wrap64(older.upstream_offset + (1 << max(i - 2, 0)))
    return bound >= 0 and newer.upstream_offset >= bound


class OffsetSyncStore:
    """MM2's in-memory offset-sync store with its translation rule.

    Call :meth:`mark_read_to_end` once the syncs topic was read to its end; before that,
    nothing is translated. With ``must_read_to_end`` (MM2 sets it when earlier checkpoints
    could not be read) only the newest sync per partition is kept during that first read.
    """

    def __init__(self, *, must_read_to_end: bool = False) -> None:
        self._slots: dict[TopicPartition, list[OffsetSync]] = {}
        self._must_read_to_end = must_read_to_end
        self.read_to_end = False

    def mark_read_to_end(self) -> None:
        self.read_to_end = True

    def syncs(self, topic: str, partition: int) -> list[OffsetSync]:
        """The 64 slots of a partition, newest first (repeats included)."""
        return list(self._slots.get((topic, partition), []))

    def add(self, sync: OffsetSync) -> None:
        tp = (sync.topic, sync.partition)
        original = self._slots.get(tp)
        only_newest = not self.read_to_end and self._must_read_to_end
        if original is None or only_newest or sync.upstream_offset < original[0].upstream_offset:
            self._slots[tp] = [sync] * SLOTS  # identical slots satisfy every invariant
            return
        slots = list(original)
        slots[0] = sync
        candidate = sync
        k = 0  # next old value that may be kept at a later slot
        for cur in range(1, SLOTS):
            prev = cur - 1
            while True:
                old = original[k]
                recent = _recent_enough(slots[prev], old, prev, cur)
                apart_from_prev = _far_enough(slots[prev], old, prev)
                apart_from_next = cur + 1 >= SLOTS or _far_enough(old, slots[cur + 1], cur)
                repeated = k + 1 < SLOTS and old is original[k + 1]
                keep = recent and apart_from_prev and apart_from_next
                if keep:
                    candidate = old
                skip = repeated or not apart_from_prev
                if keep or skip:
                    k += 1
                if not (skip and k < cur):
                    break
            if _recent_enough(slots[prev], slots[cur], prev, cur):
                break  # this slot and every older one still satisfy the invariants
            slots[cur] = candidate
        self._slots[tp] = slots

    def lookup(self, topic: str, partition: int, upstream_offset: int) -> OffsetSync | None:
        """The newest kept sync at or before ``upstream_offset`` (else the oldest kept)."""
        slots = self._slots.get((topic, partition))
        if not slots:
            return None
        for sync in slots:
            if sync.upstream_offset <= upstream_offset:
                return sync
        return slots[-1]

    def translate(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """MM2's downstream offset for a committed upstream offset; -1 if too old, None if unknown."""
        if not self.read_to_end:
            return None
        sync = self.lookup(topic, partition, upstream_offset)
        if sync is None:
            return None
        if sync.upstream_offset > upstream_offset:
            return -1
        return int(sync.downstream_offset) + (0 if sync.upstream_offset == upstream_offset else 1)
