"""A Pulsar subscription stores its acknowledgements in one etcd transaction per flush, and
its client's ledger store forgets them when the subscription's last consumer leaves."""

from __future__ import annotations

import time
from collections import Counter

from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.store import LedgerStore
from tests.support import CountingStore

TOPIC = "persistent://public/default/t"
SESSION = b"\x05" * 16


def test_a_flush_of_many_partitions_is_one_write_and_close_forgets_them() -> None:
    store = CountingStore()
    center = ConfigCenter(store, "/t")
    ledgers = LedgerStore(center)
    state = SubscriptionState(center, TOPIC, "s", "me", store=ledgers)
    try:
        now = int(time.time() * 1000)
        with state.lock:
            for partition in range(16):
                state.changed_ledger(state.acks.acknowledge_identity(TOPIC, RecordId(SESSION, partition, 0), now))
        store.calls.clear()
        state.flush()
        assert store.calls["write"] == 1, store.calls
        assert ledgers.remembered == 16
        stored = LedgerStore(center).load("s", TOPIC, 15).ledger
        assert stored.has(RecordId(SESSION, 15, 0))
    finally:
        state.close()
    assert ledgers.remembered == 0
    assert store.calls - Counter(read=store.calls["read"]) == Counter(write=1), "close had nothing more to store"
