"""Storing a commit's ledgers: one transaction whatever the number of partitions, no read in
the steady state, and nothing lost when another member wrote a ledger in between."""

from __future__ import annotations

import time
from collections import Counter

from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.ownership import Ledgers
from hotstandby.failover.ledger.store import LedgerStore
from tests.support import CountingStore

NOW = int(time.time() * 1000)
SESSION = b"\x07" * 16


def _member(store: CountingStore, partitions: int) -> tuple[AckTracker, Ledgers]:
    acks = AckTracker()
    ledgers = Ledgers(LedgerStore(ConfigCenter(store)), acks, group="g", owner="me")
    assert len(ledgers.claim({("orders", p) for p in range(partitions)})) == partitions
    return acks, ledgers


def _acknowledge(acks: AckTracker, partitions: int, seq: int) -> set[tuple[str, int]]:
    for p in range(partitions):
        acks.ledger(("orders", p)).ack(RecordId(SESSION, p, seq), NOW)
    return {("orders", p) for p in range(partitions)}


def test_a_commit_of_64_partitions_is_one_write_and_no_read() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 64)
    for seq in range(3):
        store.calls.clear()
        assert ledgers.store(_acknowledge(acks, 64, seq), deadline=time.monotonic() + 5)
        assert store.calls == Counter(write=1), f"commit {seq}: {store.calls}"
    stored = LedgerStore(ConfigCenter(store)).load("g", "orders", 63).ledger
    assert all(stored.has(RecordId(SESSION, 63, seq)) for seq in range(3))


def test_more_partitions_than_etcd_takes_in_one_transaction_go_in_several() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 300)
    store.calls.clear()
    assert ledgers.store(_acknowledge(acks, 300, 0), deadline=time.monotonic() + 5)
    assert store.calls == Counter(write=3) and store.largest_write == 128  # etcd's --max-txn-ops


def test_a_ledger_another_member_wrote_in_between_is_read_again_and_merged() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 2)
    assert ledgers.store(_acknowledge(acks, 2, 0), deadline=time.monotonic() + 5)
    # Another member (its own store, so no shared knowledge) merges an acknowledgement of its own.
    theirs = PartitionLedger()
    theirs.ack(RecordId(SESSION, 1, 99), NOW)
    fenced = LedgerStore(ConfigCenter(store)).save_all("g", {("orders", 1): (theirs, -1)}, owner="other")
    assert fenced == {("orders", 1)}, "merged into ours, which stays ours"
    store.calls.clear()
    assert ledgers.store(_acknowledge(acks, 2, 1), deadline=time.monotonic() + 5)
    assert store.calls == Counter(write=2, read=1), "refused once, read again, written"
    stored = LedgerStore(ConfigCenter(store)).load("g", "orders", 1)
    assert stored.owner == "me"
    assert [stored.ledger.has(RecordId(SESSION, 1, seq)) for seq in (0, 1, 99)] == [True, True, True]


def test_a_newer_owner_of_one_partition_fences_it_and_the_others_are_stored() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 2)
    LedgerStore(ConfigCenter(store)).claim("g", "orders", 0, owner="newer")
    assert ledgers.store(_acknowledge(acks, 2, 5), deadline=time.monotonic() + 5)
    assert ledgers.fenced == {("orders", 0)}
    center = ConfigCenter(store)
    first, second = (LedgerStore(center).load("g", "orders", p) for p in (0, 1))
    assert (first.owner, second.owner) == ("newer", "me")
    assert first.ledger.has(RecordId(SESSION, 0, 5)) and second.ledger.has(RecordId(SESSION, 1, 5))


def test_the_store_remembers_only_the_ledgers_its_member_owns() -> None:
    store = CountingStore()
    acks, ledger_store = AckTracker(), LedgerStore(ConfigCenter(store))
    ledgers = Ledgers(ledger_store, acks, group="g", owner="me")
    assert len(ledgers.claim({("orders", p) for p in range(64)})) == 64
    assert ledgers.store(_acknowledge(acks, 64, 0), deadline=time.monotonic() + 5)
    assert ledger_store.remembered == 64
    # Revoked with acknowledgements not stored yet: they are still stored, then forgotten.
    _acknowledge(acks, 64, 1)
    revoked = {("orders", p) for p in range(32, 64)}
    ledgers.release(revoked)
    assert ledgers.store(revoked, deadline=time.monotonic() + 5)
    assert ledger_store.remembered == 32
    stored = LedgerStore(ConfigCenter(store)).load("g", "orders", 40).ledger
    assert stored.has(RecordId(SESSION, 40, 1))
