"""A consumer reads back its own synchronous commits, as with confluent-kafka.

The SDK's synchronous ``commit`` returns once the acknowledgement is in the ledger (etcd); the
broker's offsets follow asynchronously (a synchronous broker commit waits without a limit for
a coordinator, and the ledger already protects the records). confluent-kafka's returns once the
broker took the offsets, so ``committed()`` right after shows them. To keep that without a
broker round trip on every commit, the consumer remembers what it committed and ``committed()``
asks the broker again, briefly, while it shows an older offset for one of those partitions.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import TopicPartition

from hotstandby.adapters.kafka.consumer.state import Slot

__all__ = ["OwnCommits"]

_PAUSE_S = 0.02  # between two questions to the broker


class OwnCommits:
    """Offsets this consumer committed synchronously on its raw consumer, until the broker shows
    them (or they are given up: the partition left, another member committed, a dead cluster)."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._sent: dict[Slot, tuple[int, str | None]] = {}  # offset, metadata
        # False once the broker showed an offset without the metadata committed with it for
        # longer than the wait: it keeps none (Tansu), and the metadata is not waited for again.
        self._keeps_metadata = True

    def sent(self, inner: Any, offsets: list[TopicPartition]) -> None:
        if inner is not self._inner:
            self._inner, self._sent, self._keeps_metadata = inner, {}, True
        self._sent.update({(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in offsets})

    def forget(self, slots: set[Slot]) -> None:
        """The partitions left this consumer: their offsets are another member's to commit."""
        for slot in slots:
            self._sent.pop(slot, None)

    def read(self, inner: Any, partitions: list[TopicPartition], timeout: float, limit: float) -> list[TopicPartition]:
        """``inner.committed(partitions)``; while it shows an older offset than this consumer
        committed, asked again for up to ``limit`` s (within ``timeout``). A commit the broker
        does not show by then is not waited for again."""
        start = time.monotonic()
        deadline, wait_until = start + timeout, start + min(timeout, limit)
        while True:
            shown: list[TopicPartition] = list(
                inner.committed(partitions, timeout=max(deadline - time.monotonic(), 0.0))
            )
            if inner is not self._inner:
                return shown
            behind = [tp for tp in shown if not self._shows(tp)]
            if not behind:
                return shown
            if time.monotonic() + _PAUSE_S >= wait_until:
                if all(tp.error is None and tp.offset == self._sent[(tp.topic, tp.partition)][0] for tp in behind):
                    self._keeps_metadata = False
                self.forget({(tp.topic, tp.partition) for tp in shown})
                return shown
            time.sleep(_PAUSE_S)

    def _shows(self, shown: TopicPartition) -> bool:
        """Whether ``shown`` is what this consumer committed there (then it is forgotten)."""
        slot = (shown.topic, shown.partition)
        if slot not in self._sent:
            return True
        offset, metadata = self._sent[slot]
        if shown.error is not None or shown.offset != offset:
            return False
        if self._keeps_metadata and metadata is not None and (shown.metadata or "") != metadata:
            return False
        del self._sent[slot]
        return True
