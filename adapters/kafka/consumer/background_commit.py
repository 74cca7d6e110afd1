"""Asynchronous commits and auto commit, finished on a thread of the consumer's own.

``commit(asynchronous=True)`` and auto commit return once the acknowledgements are in the
consumer's ledgers (memory): storing them in the config center takes an etcd round trip, which
has no place on the caller's thread or in ``poll``. The thread takes the dirty ledgers' copies
under the consumer's lock, stores them in one transaction without it, and then, in that
order, commits the offsets asked for on the broker — on the raw consumer they belong to only:
after a switch the old cluster's offsets were committed by the switch itself. Commits asked
for while a store is under way are merged (the highest offset per partition) and follow it.
What is not stored (etcd unreachable) is tried again a second later, and is stored by the next
synchronous commit, a switch, or close, all of which also wait for what is in flight.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot, log
from hotstandby.failover.ledger.ownership import RETRY_S

__all__ = ["BackgroundCommits", "broker_offsets"]

# How long close waits for the thread.
_STOP_S = 5.0


class BackgroundCommits:
    """The consumer's commit thread (see the module doc); started by the first request."""

    def __init__(self, state: ConsumerState) -> None:
        self._s = state
        self._offsets: dict[Slot, int] = {}  # to commit on the broker once stored (under the lock)
        self._metadata: dict[Slot, str] = {}  # the commit metadata given with them
        self._inner: Any = None  # the raw consumer they belong to
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def request(self, positions: dict[Slot, int], metadata: dict[Slot, str]) -> None:
        """Under the consumer's lock, the acknowledgements collected: store them, then commit
        ``positions`` (physical partition -> next offset) on the broker, with ``metadata``."""
        if self._s.inner is not self._inner:
            self._offsets, self._metadata, self._inner = {}, {}, self._s.inner
        for slot, offset in positions.items():
            if offset >= self._offsets.get(slot, -1):
                self._offsets[slot] = offset
                self._metadata.pop(slot, None)
                if slot in metadata:
                    self._metadata[slot] = metadata[slot]
        self.wake()

    def wake(self) -> None:
        """Store what is dirty soon."""
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._run, name="hotstandby-kafka-commit", daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Close: no more background stores (close stores what is left itself)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(_STOP_S)

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(RETRY_S)  # a failed store is let through again (Ledgers.take) after this
            self._wake.clear()
            if self._stopping:
                return
            try:
                self._flush()
            except Exception as exc:  # the thread must not die: report, the next round retries
                log.warning("consumer.background_commit_failed", error=repr(exc))

    def _flush(self) -> None:
        s = self._s
        with s.lock:
            batch = s.ledgers.take()
            if batch is None and s.ledgers.dirty:
                return  # not yet (a second after a failure): the next round
            offsets, metadata, inner = self._offsets, self._metadata, self._inner
            self._offsets, self._metadata = {}, {}
        stored = s.ledgers.write(batch) if batch is not None else None
        with s.lock:
            if batch is not None and stored is not None and not s.ledgers.finish(batch, stored):
                if inner is self._inner:  # after the ledgers, whenever they are stored
                    for slot, offset in offsets.items():
                        if offset > self._offsets.get(slot, -1):
                            self._offsets[slot] = offset
                            if slot in metadata:
                                self._metadata[slot] = metadata[slot]
                return
            if not offsets or inner is not s.inner or s.closing:
                return
        try:
            inner.commit(offsets=broker_offsets(offsets, metadata), asynchronous=True)
        except (KafkaException, RuntimeError) as exc:  # the cluster, or the consumer closed meanwhile
            log.warning("consumer.broker_commit_failed", cluster=s.spec.name, error=str(exc))


def broker_offsets(positions: dict[Slot, int], metadata: dict[Slot, str]) -> list[TopicPartition]:
    """``positions`` as the raw consumer commits them, with their metadata."""
    return [TopicPartition(t, p, o) if (t, p) not in metadata else TopicPartition(t, p, o, metadata[(t, p)])
            for (t, p), o in sorted(positions.items())]  # fmt: skip
