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
    claimed = LedgerStore(ConfigCenter(store)).save_all("g", {("orders", 1): (theirs, -1)}, owner="other")
    assert claimed == {("orders", 1): 0}, "merged into ours (generation 0), which stays ours"
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


def _ack_one(acks: AckTracker, ledgers: Ledgers, seq: int, *, left_behind: bool = False) -> set[tuple[str, int]]:
    acks.ledger(("orders", 0)).ack(RecordId(SESSION, 0, seq), NOW)
    ledgers.acknowledged({("orders", 0)}, left_behind=left_behind)
    return {("orders", 0)}


def test_an_acknowledgement_stored_after_another_member_claimed_the_partition_is_late() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 1)
    assert ledgers.store(_ack_one(acks, ledgers, 1), deadline=time.monotonic() + 5)
    assert ledgers.take_late({("orders", 0)}) == set(), "stored while ours"
    LedgerStore(ConfigCenter(store)).claim("g", "orders", 0, owner="other")  # a rebalance gave it away
    assert ledgers.store(_ack_one(acks, ledgers, 2), deadline=time.monotonic() + 5)
    assert ledgers.take_late({("orders", 0)}) == {("orders", 0)}
    assert ledgers.take_late({("orders", 0)}) == set(), "taken once"
    stored = LedgerStore(ConfigCenter(store)).load("g", "orders", 0)
    assert stored.owner == "other" and stored.ledger.has(RecordId(SESSION, 0, 2)), "merged all the same"


def test_an_acknowledgement_after_a_switch_is_late_only_if_another_member_claimed_in_between() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 1)
    ledgers.reset()  # a switch: the record below was handed out before it
    assert ledgers.claim({("orders", 0)}) == {("orders", 0)}, "claimed again by ourselves"
    assert ledgers.store(_ack_one(acks, ledgers, 1, left_behind=True), deadline=time.monotonic() + 5)
    assert ledgers.take_late({("orders", 0)}) == set(), "only our own claim in between"
    ledgers.reset()
    LedgerStore(ConfigCenter(store)).claim("g", "orders", 0, owner="other")
    assert ledgers.claim({("orders", 0)}) == {("orders", 0)}
    assert ledgers.store(_ack_one(acks, ledgers, 2, left_behind=True), deadline=time.monotonic() + 5)
    assert ledgers.take_late({("orders", 0)}) == {("orders", 0)}, "the other member may have handed it out"


def test_a_late_store_of_the_commit_thread_is_not_reported_to_a_later_synchronous_commit() -> None:
    store = CountingStore()
    acks, ledgers = _member(store, 1)
    LedgerStore(ConfigCenter(store)).claim("g", "orders", 0, owner="other")
    _ack_one(acks, ledgers, 1)  # an asynchronous commit: late, logged by the commit thread
    batch = ledgers.take()
    assert batch is not None
    assert ledgers.finish(batch, ledgers.write(batch))
    ledgers.release({("orders", 0)})  # revoked, then assigned to us again
    assert ledgers.claim({("orders", 0)}) == {("orders", 0)}, "ours again"
    assert ledgers.store(_ack_one(acks, ledgers, 2), deadline=time.monotonic() + 5)
    assert ledgers.take_late({("orders", 0)}) == set(), "this commit's records were handed out under our claim"
