"""Following a group's stored ledgers across a broken watch: resume from the last revision
seen (no re-read of what did not change), re-read all after a compaction. No etcd: the
config center runs on a MemoryStore."""

from __future__ import annotations

import threading
import time

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.follower import LedgerFollower
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from tests.support import wait_for

SESSION = bytes(16)


def _ledger(*seqs: int) -> PartitionLedger:
    ledger = PartitionLedger()
    for seq in seqs:
        ledger.ack(RecordId(SESSION, 0, seq), int(time.time() * 1000))  # recent: not collected
    return ledger


class _Seen:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int, int]] = []  # (topic, partition, records in the ledger)

    def __call__(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        with self.lock:
            self.calls.append((topic, partition, len(ledger)))

    def of(self, partition: int) -> list[int]:
        with self.lock:
            return [n for _, p, n in self.calls if p == partition]


def test_a_broken_watch_resumes_where_it_was_without_reading_everything_again() -> None:
    store = MemoryStore()
    center = ConfigCenter(store, "/lf")
    ledgers = LedgerStore(center)
    ledgers.save("g", "t", 0, _ledger(1), generation=0, owner="x")
    ledgers.save("g", "t", 1, _ledger(1), generation=0, owner="x")
    seen = _Seen()
    follower = LedgerFollower(center, "g", seen)
    follower.start()
    try:
        wait_for(lambda: seen.of(0) and seen.of(1), 5, "the stored ledgers")
        store.disconnect()
        store.reconnect()
        started = time.monotonic()
        ledgers.save("g", "t", 1, _ledger(1, 2), generation=0, owner="x")
        wait_for(lambda: 2 in seen.of(1), 5, "the ledger stored while the watch was broken")
        took = time.monotonic() - started
        assert seen.of(0) == [1], "an unchanged ledger was read again: the watch did not resume"
        assert took < 0.9, f"{took:.2f} s to resume (a fixed 1 s sleep?)"
        store.compact(store.get_prefix("/")[1])
        store.disconnect()
        store.reconnect()
        ledgers.save("g", "t", 1, _ledger(1, 2, 3), generation=0, owner="x")
        wait_for(lambda: 3 in seen.of(1), 5, "the ledger stored after the compaction")
    finally:
        follower.close()
