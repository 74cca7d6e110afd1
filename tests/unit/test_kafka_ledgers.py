"""A Kafka consumer's ledgers while the config center is unreachable: kept, then stored."""

from __future__ import annotations

import time

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker
from hotstandby.failover.ledger.ownership import Ledgers
from hotstandby.failover.ledger.store import LedgerStore
from tests.support import GatedStore

KEY = ("orders", 0)
NOW = int(time.time() * 1000)  # older acknowledgements are dropped from stored ledgers


class DownStore(GatedStore):
    """Refuses every read and write while ``down``."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise ConfigCenterUnavailable("test: etcd down")

    def get(self, key: str):  # type: ignore[no-untyped-def]
        self._check()
        return super().get(key)

    def get_many(self, keys):  # type: ignore[no-untyped-def]
        self._check()
        return super().get_many(keys)

    def put_all_if_revisions(self, expected, puts):  # type: ignore[no-untyped-def]
        self._check()
        return super().put_all_if_revisions(expected, puts)


def setup() -> tuple[DownStore, LedgerStore, AckTracker, Ledgers]:
    store = DownStore(MemoryStore())
    ledgers_store = LedgerStore(ConfigCenter(store))
    acks = AckTracker()
    return store, ledgers_store, acks, Ledgers(ledgers_store, acks, group="g", owner="me")


def test_acknowledgements_made_while_etcd_is_down_are_kept_and_stored_when_it_answers() -> None:
    store, ledgers_store, acks, ledgers = setup()
    assert ledgers.claim({KEY}) == {KEY}
    store.down = True
    assert acks.offer("orders", KEY, 0, RecordId(bytes(16), 0, 0), 1)
    acks.acknowledge_through(KEY, 1)
    assert not ledgers.store(acks.collect(now_ms=NOW)), "not stored, and nothing raised"
    assert ledgers.dirty == {KEY}
    assert not acks.offer("orders", KEY, 0, RecordId(bytes(16), 0, 0), 1), "filtered locally"
    store.down = False
    assert not ledgers.store(set()), "no new attempt within a second of the failure"
    assert ledgers.store(set(), deadline=0.0), "an attempt with a deadline"
    assert ledgers_store.load("g", *KEY).ledger.has(RecordId(bytes(16), 0, 0))


def test_a_claim_while_etcd_is_down_is_retried() -> None:
    store, ledgers_store, _, ledgers = setup()
    store.down = True
    assert ledgers.claim({KEY}) == set()
    assert ledgers.unclaimed == {KEY}
    store.down = False
    assert ledgers.retry_claims(force=True) == {KEY}
    assert ledgers.owned == {KEY} and not ledgers.unclaimed
    assert ledgers_store.load("g", *KEY).owner == "me"


def test_a_ledger_not_owned_is_merged_without_taking_it_over() -> None:
    _, ledgers_store, acks, ledgers = setup()
    ledgers_store.claim("g", *KEY, owner="other")
    acks.ledger(KEY).ack(RecordId(bytes(16), 0, 5), NOW)
    assert ledgers.store({KEY})
    doc = ledgers_store.load("g", *KEY)
    assert doc.owner == "other" and doc.ledger.has(RecordId(bytes(16), 0, 5))
