"""Server-side fencing and poisoned values, for every config-center store.

A mixin: the class combining it with :class:`~tests.contract.configcenter.ConfigCenterContract`
provides the ``center`` and ``store`` fixtures (``orders`` on kafka-a, epoch 1).
"""

from __future__ import annotations

import json
import threading

import pytest

from hotstandby.configcenter import ConfigCenter, KVStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConcurrentUpdateError, StaleEpochError, UnexpectedEpochError
from tests.support import ChangeQueue, capture_logs

DEEP = b"[" * 10_000 + b"]" * 10_000


def route_value(active: str, epoch: int, clusters: tuple[str, ...] = ("kafka-a", "kafka-b")) -> bytes:
    return json.dumps({"active": active, "clusters": list(clusters), "epoch": epoch}).encode()


class FencingContract:
    def test_a_poisoned_cluster_blocks_only_the_routes_that_use_it(self, center: ConfigCenter, store: KVStore) -> None:
        center.put_cluster(ClusterSpec(name="kafka-c", kind="kafka", url="127.0.0.1:9"))
        center.create_route("other", ["kafka-a", "kafka-c"], "kafka-a")
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher, capture_logs() as logs:
            store.put(center.keys.cluster("kafka-c"), DEEP)
            center.switch("orders", "kafka-b")
            assert (changes.take().route.name, watcher.current("orders").epoch) == ("orders", 2)  # type: ignore[union-attr]
            store.put(center.keys.route("other"), route_value("kafka-c", 2, ("kafka-a", "kafka-c")))
            center.switch("orders", "kafka-a")
            change = changes.take()
            assert (change.route.name, change.route.epoch) == ("orders", 3), "a flip after the poison was not applied"
            changes.assert_empty()
            assert watcher.current("other").active == "kafka-a"  # type: ignore[union-attr]
        clusters = [e for e in logs if e["event"] == "cluster.rejected"]
        assert len(clusters) == 1 and "nested" in clusters[0]["reason"]
        routes = [e for e in logs if e["event"] == "route.rejected"]
        assert len(routes) == 1 and "'kafka-c' has an invalid definition" in routes[0]["reason"]

    @pytest.mark.parametrize("via", ["delete_route", "raw delete"])
    def test_a_route_created_again_continues_from_its_last_epoch(
        self, center: ConfigCenter, store: KVStore, via: str
    ) -> None:
        center.switch("orders", "kafka-b")
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher:
            if via == "delete_route":
                assert center.delete_route("orders").epoch == 2  # type: ignore[union-attr]
            else:
                store.delete(center.keys.route("orders"))
            created = center.create_route("orders", ["kafka-a", "kafka-b"], "kafka-a")
            assert created.epoch == 3
            change = changes.take()
            assert (change.route.active, change.route.epoch) == ("kafka-a", 3)
            assert watcher.current("orders") == created

    def test_a_value_below_the_epoch_floor_is_invalid_for_everyone(self, center: ConfigCenter, store: KVStore) -> None:
        center.switch("orders", "kafka-b")
        store.put(center.keys.route("orders"), route_value("kafka-a", 1))
        snap = center.snapshot()
        assert "orders" not in snap.routes
        assert any("epoch 1 is not greater than the last epoch 2" in str(p) for p in snap.problems)
        with pytest.raises(StaleEpochError):
            center.route("orders")
        # A client starting now does not follow it.
        with center.watch_routes() as watcher:
            assert watcher.current("orders") is None and watcher.rejected == 1
        # Re-created with the floor's epoch but other contents: invalid too.
        store.delete(center.keys.route("orders"))
        store.put(center.keys.route("orders"), route_value("kafka-a", 2))
        with center.watch_routes() as watcher:
            assert watcher.current("orders") is None
        with pytest.raises(StaleEpochError, match="other contents"):
            center.route("orders")
        # The next switch continues above the floor.
        assert center.switch("orders", "kafka-b").epoch == 3
        assert center.route("orders").active == "kafka-b"

    def test_switch_with_expect_epoch_refuses_another_epoch(self, center: ConfigCenter) -> None:
        with pytest.raises(UnexpectedEpochError, match=r"at epoch 1 .*not the expected 5"):
            center.switch("orders", "kafka-b", expect_epoch=5)
        assert center.route("orders").epoch == 1
        assert center.switch("orders", "kafka-b", expect_epoch=1).epoch == 2

    def test_concurrent_switches_with_expect_epoch_exactly_one_wins(self, center: ConfigCenter) -> None:
        outcomes: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(6)

        def flip() -> None:
            barrier.wait(timeout=10)
            try:
                center.switch("orders", "kafka-b", expect_epoch=1)
                result = "won"
            except (UnexpectedEpochError, ConcurrentUpdateError) as exc:
                result = type(exc).__name__
            with lock:
                outcomes.append(result)

        threads = [threading.Thread(target=flip) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(outcomes) == 6 and outcomes.count("won") == 1, outcomes
        assert center.route("orders").epoch == 2
