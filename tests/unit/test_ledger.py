"""The ack ledger: membership, merge, GC, JSON; the fenced store on the memory config center."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.errors import FencedError, ValidationError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore

S1, S2 = b"\x01" * 16, b"\x02" * 16
NOW = int(time.time() * 1000)


def rid(session: bytes, seq: int) -> RecordId:
    return RecordId(session, 0, seq)


@given(st.lists(st.integers(0, 300), max_size=120), st.lists(st.integers(0, 300), max_size=40))
def test_acknowledging_many_sequences_at_once_is_acknowledging_each(before: list[int], batch: list[int]) -> None:
    one_by_one, at_once = PartitionLedger(), PartitionLedger()
    for seq in before:
        one_by_one.ack(rid(S1, seq), NOW)
        at_once.ack(rid(S1, seq), NOW)
    for seq in batch:
        one_by_one.ack(rid(S1, seq), NOW + 1)
    at_once.ack_sequences(S1, list(batch), NOW + 1)
    assert at_once == one_by_one
    assert [seq for seq in range(302) if at_once.has(rid(S1, seq))] == sorted(set(before) | set(batch))


def test_membership_by_session_and_sequence() -> None:
    ledger = PartitionLedger()
    for seq in (0, 1, 2, 7):
        ledger.ack(rid(S1, seq), now_ms=10)
    assert rid(S1, 2) in ledger and rid(S1, 7) in ledger
    assert rid(S1, 3) not in ledger and rid(S2, 0) not in ledger
    assert len(ledger) == 4 and list(ledger.ranges(S1)) == [(0, 3), (7, 8)]


def test_merge_is_a_union_and_gc_drops_idle_sessions() -> None:
    a, b = PartitionLedger(), PartitionLedger()
    a.ack(rid(S1, 0), now_ms=100)
    b.ack(rid(S1, 1), now_ms=200)
    b.ack(rid(S2, 5), now_ms=50)
    a.merge(b)
    assert list(a.ranges(S1)) == [(0, 2)] and rid(S2, 5) in a
    assert a.gc(max_age_ms=100, now_ms=200) == [S2]
    assert a.sessions == [S1]


def test_json_roundtrip_and_malformed_documents() -> None:
    ledger = PartitionLedger()
    for seq in range(0, 1000, 3):
        ledger.ack(rid(S1, seq), now_ms=5)
    doc = LedgerDocument(ledger, generation=4, owner="c1", updated_at_ms=9)
    back = LedgerDocument.from_json(doc.to_json())
    assert (back.ledger, back.generation, back.owner) == (ledger, 4, "c1")
    for bad, match in [("{", "malformed"), ('{"v": 2}', "version 1"),
                       ('{"v": 1, "sessions": {"zz": {}}}', "session zz"),
                       ('{"v": 1, "sessions": {"01": {"last_ack_ms": 1, "acked": "!!"}}}', "session 01")]:  # fmt: skip
        with pytest.raises(ValidationError, match=match):
            LedgerDocument.from_json(bad)


@given(st.text(max_size=20), st.integers(-1, 2**40), st.lists(st.integers(0, 2**33), max_size=30))
def test_the_stored_form_is_the_compact_json_of_the_document(owner: str, generation: int, seqs: list[int]) -> None:
    ledger = PartitionLedger()
    for seq in seqs:
        ledger.ack(rid(S1 if seq % 2 else S2, seq), now_ms=NOW)
    doc = LedgerDocument(ledger, generation=generation, owner=owner, updated_at_ms=NOW)
    expected = {"v": 1, "generation": generation, "owner": owner, "updated_at_ms": NOW,
                "sessions": ledger.sessions_json()}  # fmt: skip
    assert doc.to_json() == json.dumps(expected, separators=(",", ":"))


@pytest.fixture
def store() -> LedgerStore:
    return LedgerStore(ConfigCenter(MemoryStore(), "/t"))


def test_save_merges_with_what_a_previous_owner_flushed(store: LedgerStore) -> None:
    first, second = PartitionLedger(), PartitionLedger()
    first.ack(rid(S1, 0), now_ms=NOW)
    second.ack(rid(S1, 1), now_ms=NOW)
    store.save("g", "orders", 0, first, generation=1, owner="c1")
    written = store.save("g", "orders", 0, second, generation=2, owner="c2")
    assert list(written.ledger.ranges(S1)) == [(0, 2)]
    loaded = store.load("g", "orders", 0)
    assert (loaded.generation, loaded.owner, list(loaded.ledger.ranges(S1))) == (2, "c2", [(0, 2)])


def test_a_stale_generation_is_fenced_but_its_acknowledgements_are_kept(store: LedgerStore) -> None:
    ledger = PartitionLedger()
    ledger.ack(rid(S1, 0), now_ms=NOW)
    store.save("g", "orders", 0, ledger, generation=5, owner="new")
    stale = PartitionLedger()
    stale.ack(rid(S1, 99), now_ms=NOW)
    with pytest.raises(FencedError, match="generation 5"):
        store.save("g", "orders", 0, stale, generation=4, owner="old")
    loaded = store.load("g", "orders", 0)
    # Processed by the old owner: must stay filtered; the ownership stays with the new owner.
    assert rid(S1, 99) in loaded.ledger and rid(S1, 0) in loaded.ledger
    assert (loaded.generation, loaded.owner) == (5, "new")


def test_old_sessions_are_dropped_when_saving() -> None:
    store = LedgerStore(ConfigCenter(MemoryStore(), "/t"), session_max_age_ms=1000)
    ledger = PartitionLedger()
    ledger.ack(rid(S1, 0), now_ms=0)  # long ago
    assert store.save("g", "t", 0, ledger, generation=1, owner="c").ledger.sessions == []


def test_missing_ledger_loads_empty(store: LedgerStore) -> None:
    doc = store.load("g", "persistent://public/default/x", 3)
    assert doc.generation == -1 and len(doc.ledger) == 0


def test_claiming_fences_the_previous_owner(store: LedgerStore) -> None:
    ledger = PartitionLedger()
    ledger.ack(rid(S1, 0), now_ms=NOW)
    first = store.claim("g", "t", 0, owner="c1")
    store.save("g", "t", 0, ledger, generation=first.generation, owner="c1")
    second = store.claim("g", "t", 0, owner="c2")
    assert second.generation == first.generation + 1 and rid(S1, 0) in second.ledger
    with pytest.raises(FencedError):
        store.save("g", "t", 0, ledger, generation=first.generation, owner="c1")


@pytest.mark.parametrize(
    "raw",
    [b"[[[[", b"\xff\xfe", b'{"generation": "x"}', b"[" * 5000 + b"]" * 5000],
    ids=["truncated", "not-utf8", "wrong-type", "deep"],
)
def test_a_damaged_stored_ledger_is_replaced_not_raised(store: LedgerStore, raw: bytes) -> None:
    key = store.key("g", "orders", 0)
    store._center.store.put(key, raw)
    assert len(store.load("g", "orders", 0).ledger) == 0
    claimed = store.claim("g", "orders", 0, owner="m1")
    assert claimed.generation == 0 and len(claimed.ledger) == 0
    ledger = PartitionLedger()
    ledger.ack(rid(b"s" * 16, 3), int(time.time() * 1000))
    store.save("g", "orders", 0, ledger, generation=claimed.generation, owner="m1")
    assert store.load("g", "orders", 0).ledger.has(rid(b"s" * 16, 3))
