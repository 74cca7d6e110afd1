"""Presence while the config center is unreachable (in-memory store, no processes)."""

from __future__ import annotations

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.memory import MemoryStore
from hotstandby.failover.presence import Presence, list_clients
from tests.support import capture_logs, wait_for


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts = 0

    def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        self.puts += 1
        return super().put(key, value, lease=lease)


def test_publishing_during_an_outage_never_raises_and_is_written_when_etcd_returns() -> None:
    store = CountingStore()
    center = ConfigCenter(store, "/ns")
    presence = Presence(center, "orders", "c1", "consumer", ttl_s=3)
    try:
        presence.publish(cluster="a", state="active")
        store.disconnect()
        with capture_logs() as logs:
            presence.publish(state="draining")  # fails: etcd is unreachable
            calls = store.puts
            presence.publish(state="switching")
            presence.publish(cluster="b", state="active")
            assert store.puts == calls, "each change of state waited for an unreachable etcd"
            store.reconnect()
            wait_for(lambda: [d.get("cluster") for d in list_clients(center, "orders")] == ["b"], 10, "the rewrite")
        [doc] = list_clients(center, "orders")
        assert (doc["cluster"], doc["state"]) == ("b", "active")
        events = [e["event"] for e in logs if e["event"].startswith("presence.")]
        assert events == ["presence.write_failed", "presence.written_again"], events
    finally:
        presence.close()
    assert list_clients(center, "orders") == []
