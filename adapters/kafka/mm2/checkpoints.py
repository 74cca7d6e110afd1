"""Which checkpoints MM2 emits for a consumer group (MirrorCheckpointTask's rules).

For each partition the group committed on the source: skip topics the topic filter excludes,
translate the committed offset with the offset-sync store, drop partitions without syncs or
whose offset is too old to translate (-1), name the topic as the target knows it, and emit
only what is new: the first checkpoint of a partition, a rewind of the upstream group, or a
downstream offset that moved forward (checkpoints never move the target backwards otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hotstandby.adapters.kafka.mm2.codec import Checkpoint
from hotstandby.adapters.kafka.mm2.policy import NameFilter, ReplicationPolicy
from hotstandby.adapters.kafka.mm2.syncs import OffsetSyncStore

__all__ = ["CheckpointTracker"]

#: (topic, partition) -> (committed offset, commit metadata), as listed on the source.
GroupOffsets = Mapping[tuple[str, int], tuple[int, str]]


class CheckpointTracker:
    """Remembers the last checkpoint per (group, target topic, partition) for one flow."""

    def __init__(self, policy: ReplicationPolicy, source_alias: str, target_alias: str, topics: NameFilter) -> None:
        self.policy = policy
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.topics = topics
        self._last: dict[tuple[str, str, int], Checkpoint] = {}

    def remember(self, checkpoints: Iterable[Checkpoint]) -> None:
        """Record checkpoints already written (also those read back from the topic at start)."""
        for cp in checkpoints:
            self._last[(cp.group, cp.topic, cp.partition)] = cp

    def last(self, group: str, topic: str, partition: int) -> Checkpoint | None:
        return self._last.get((group, topic, partition))

    def _is_new(self, cp: Checkpoint) -> bool:
        last = self._last.get((cp.group, cp.topic, cp.partition))
        return (
            last is None
            or cp.upstream_offset < last.upstream_offset  # the upstream group rewound
            or cp.downstream_offset > last.downstream_offset
        )

    def checkpoints_for_group(self, group: str, offsets: GroupOffsets, store: OffsetSyncStore) -> list[Checkpoint]:
        """Checkpoints to emit now for ``group`` (not yet remembered: call :meth:`remember` once written)."""
        out = []
        for (topic, partition), (offset, metadata) in sorted(offsets.items()):
            if offset < 0 or not self.topics.matches(topic):
                continue
            downstream = store.translate(topic, partition, offset)
            if downstream is None or downstream < 0:
                continue
            target_topic = self.policy.checkpoint_topic_name(topic, self.source_alias, self.target_alias)
            cp = Checkpoint(group, target_topic, partition, offset, downstream, metadata)
            if self._is_new(cp):
                out.append(cp)
        return out
