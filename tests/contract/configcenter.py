"""Behaviour every config-center store must have, written once.

A subclass provides two fixtures: ``store`` (a KVStore) and ``namespace`` (unused by any
other test). ``TestMemoryConfigCenter`` runs it on the in-memory store,
``TestEtcdConfigCenter`` on the reference cluster's etcd.
"""

from __future__ import annotations

import json
import threading

import pytest

from hotstandby.configcenter import ConfigCenter, Event, KVStore
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.errors import (
    ConcurrentUpdateError,
    ConfigError,
    RevisionCompacted,
    SwitchError,
    UnknownClusterError,
    UnknownRouteError,
    ValidationError,
)
from tests.support import ChangeQueue, GatedStore, capture_logs, wait_for


def kafka(name: str) -> ClusterSpec:
    return ClusterSpec(name=name, kind="kafka", url="127.0.0.1:9", producer={"batch.num.messages": 1})


def pulsar(name: str) -> ClusterSpec:
    return ClusterSpec(name=name, kind="pulsar", url="pulsar://127.0.0.1:9")


class ConfigCenterContract:
    @pytest.fixture
    def center(self, store: KVStore, namespace: str) -> ConfigCenter:
        center = ConfigCenter(store, namespace)
        for spec in (kafka("kafka-a"), kafka("kafka-b"), pulsar("pulsar-a")):
            center.put_cluster(spec)
        center.create_route("orders", ["kafka-a", "kafka-b"], "kafka-a")
        return center

    @pytest.fixture
    def gated(self, store: KVStore, namespace: str, center: ConfigCenter) -> tuple[GatedStore, ConfigCenter]:
        gated = GatedStore(store)
        return gated, ConfigCenter(gated, namespace)

    # -- key-value store -------------------------------------------------------------------

    def test_put_get_and_sorted_prefix_read(self, store: KVStore, namespace: str) -> None:
        r1 = store.put(f"{namespace}/x/b", b"2")
        r2 = store.put(f"{namespace}/x/a", b"1")
        assert r2 > r1
        kv = store.get(f"{namespace}/x/a")
        assert kv is not None and kv.value == b"1" and kv.mod_revision == r2
        assert store.get(f"{namespace}/x/missing") is None
        kvs, revision = store.get_prefix(f"{namespace}/x/")
        assert [k.key for k in kvs] == [f"{namespace}/x/a", f"{namespace}/x/b"]
        assert revision >= r2

    def test_put_if_revision_is_a_compare_and_swap(self, store: KVStore, namespace: str) -> None:
        key = f"{namespace}/cas"
        assert store.put_if_revision(key, b"first", 0)
        assert not store.put_if_revision(key, b"again", 0), "0 means: only if absent"
        current = store.get(key)
        assert current is not None
        assert not store.put_if_revision(key, b"stale", current.mod_revision - 1)
        assert store.put_if_revision(key, b"second", current.mod_revision)
        assert store.get(key).value == b"second"  # type: ignore[union-attr]

    def test_several_keys_are_read_together_and_written_in_one_compare_and_swap(
        self, store: KVStore, namespace: str
    ) -> None:
        a, b, c = (f"{namespace}/many/{k}" for k in "abc")
        store.put(a, b"1")
        found = store.get_many([a, b])
        assert found[a] is not None and found[a].value == b"1" and found[b] is None
        assert (written := store.put_all_if_revisions({a: found[a].mod_revision, b: 0}, {a: b"2", b: b"3"}))
        assert written == {a: store.get(a).mod_revision, b: store.get(b).mod_revision}  # type: ignore[union-attr]
        assert store.put_all_if_revisions({a: written[a], b: 0}, {a: b"4", c: b"5"}) is None, "b exists now"
        after = store.get_many([a, b, c])
        assert [kv.value if kv else None for kv in after.values()] == [b"2", b"3", None], "nothing written"

    def test_delete(self, store: KVStore, namespace: str) -> None:
        store.put(f"{namespace}/d", b"v")
        assert store.delete(f"{namespace}/d")
        assert not store.delete(f"{namespace}/d")
        assert store.get(f"{namespace}/d") is None

    def test_watch_replays_history_then_follows_live_changes(self, store: KVStore, namespace: str) -> None:
        prefix = f"{namespace}/w/"
        first = store.put(prefix + "1", b"a")
        store.put(f"{namespace}/elsewhere", b"not watched")
        store.delete(prefix + "1")
        stream = store.watch_prefix(prefix, first)
        try:
            live = store.put(prefix + "2", b"b")
            seen = []
            while len(seen) < 3:
                batch = stream.get(timeout=5)
                assert batch, "watch delivered nothing within 5 s"
                seen.extend(batch)
            assert [(e.type, e.key, e.value) for e in seen] == [
                ("put", prefix + "1", b"a"),
                ("delete", prefix + "1", b""),
                ("put", prefix + "2", b"b"),
            ]
            assert seen[0].mod_revision == first and seen[2].mod_revision == live
        finally:
            stream.cancel()

    def test_cancel_ends_a_wait_for_events_at_once(self, store: KVStore, namespace: str) -> None:
        """What stopping a watch relies on: a get waiting on another thread returns, empty."""
        after = store.put(f"{namespace}/quiet-marker", b"")
        stream = store.watch_prefix(f"{namespace}/quiet/", after + 1)
        got: list[list[Event]] = []
        waiting = threading.Thread(target=lambda: got.append(stream.get(timeout=30)), daemon=True)
        waiting.start()
        stream.cancel()  # before or during the get: either way it must not wait the 30 s
        waiting.join(5)
        assert not waiting.is_alive() and got == [[]]
        stream.cancel()  # again: harmless

    def test_watch_from_compacted_revision_fails(self, store: KVStore, namespace: str) -> None:
        old = store.put(f"{namespace}/c/k", b"1")
        latest = store.put(f"{namespace}/c/k", b"2")
        store.compact(latest)
        with pytest.raises(RevisionCompacted):
            store.watch_prefix(f"{namespace}/c/", old).get(timeout=5)

    def test_leased_keys_vanish_when_the_lease_is_revoked(self, store: KVStore, namespace: str) -> None:
        lease = store.grant_lease(30)
        store.put(f"{namespace}/l/a", b"1", lease=lease)
        store.put(f"{namespace}/l/b", b"2")
        assert store.refresh_lease(lease)
        store.revoke_lease(lease)
        assert store.get(f"{namespace}/l/a") is None and store.get(f"{namespace}/l/b") is not None
        assert not store.refresh_lease(lease)
        store.revoke_lease(lease)  # again: harmless

    def test_leased_keys_vanish_when_the_lease_expires(self, store: KVStore, namespace: str) -> None:
        lease = store.grant_lease(2)
        store.put(f"{namespace}/e/a", b"1", lease=lease)
        wait_for(lambda: store.get(f"{namespace}/e/a") is None, 15, "the lease to expire")
        assert not store.refresh_lease(lease)

    # -- documents -------------------------------------------------------------------------

    def test_cluster_roundtrip_and_no_silent_overwrite(self, center: ConfigCenter) -> None:
        assert center.cluster("kafka-a") == kafka("kafka-a")
        with pytest.raises(ConfigError, match="already exists"):
            center.put_cluster(kafka("kafka-a"))
        with pytest.raises(UnknownClusterError):
            center.cluster("nope")

    def test_create_route_checks_clusters(self, center: ConfigCenter) -> None:
        with pytest.raises(UnknownClusterError, match="ghost"):
            center.create_route("r1", ["kafka-a", "ghost"], "kafka-a")
        with pytest.raises(ValidationError, match="different kinds"):
            center.create_route("r2", ["kafka-a", "pulsar-a"], "kafka-a")
        with pytest.raises(ValidationError, match="not one of"):
            center.create_route("r3", ["kafka-a", "kafka-b"], "pulsar-a")
        with pytest.raises(ConfigError, match="already exists"):
            center.create_route("orders", ["kafka-a", "kafka-b"], "kafka-b")
        assert center.route("orders").active == "kafka-a"

    def test_links_are_validated_and_stored(self, center: ConfigCenter) -> None:
        center.put_link(Link(source="kafka-a", target="kafka-b"))
        assert center.links()[("kafka-a", "kafka-b")].policy == "prefix"
        with pytest.raises(ValidationError, match="same kind"):
            center.put_link(Link(source="kafka-a", target="pulsar-a"))

    def test_topic_registry(self, center: ConfigCenter) -> None:
        center.register_topic("pulsar-a", "persistent://public/default/payments")
        center.register_topic("pulsar-a", "persistent://public/default/payments")
        center.register_topic("pulsar-a", "persistent://tenant/ns/other")
        assert center.registered_topics("pulsar-a") == [
            "persistent://public/default/payments",
            "persistent://tenant/ns/other",
        ]
        assert center.registered_topics("kafka-a") == []
        with pytest.raises(UnknownClusterError):
            center.register_topic("ghost", "t")

    def test_a_registered_topic_key_that_names_no_topic_is_left_out(self, center: ConfigCenter) -> None:
        center.register_topic("pulsar-a", "persistent://public/default/payments")
        prefix = center.keys.topics("pulsar-a")
        for junk in ("", "a/b", "%2F%2F/x"):  # no name; a name with a '/' not quoted
            center.store.put(prefix + junk, b"[[[[")
        assert center.registered_topics("pulsar-a") == ["persistent://public/default/payments"]

    def test_switch_moves_epoch_forward_with_audit_fields(self, center: ConfigCenter) -> None:
        route = center.switch("orders", "kafka-b", reason="planned", by="sre@test")
        assert (route.active, route.epoch, route.reason, route.by) == ("kafka-b", 2, "planned", "sre@test")
        assert route.at
        assert center.route("orders") == route
        assert center.switch("orders", "kafka-a").epoch == 3

    @pytest.mark.parametrize(
        ("route", "to", "error", "match"),
        [
            ("orders", "ghost", UnknownClusterError, "unknown cluster 'ghost'"),
            ("orders", "pulsar-a", SwitchError, "is a pulsar cluster"),
            ("orders", "kafka-a", SwitchError, "already active"),
            ("nope", "kafka-b", UnknownRouteError, "unknown route"),
        ],
    )
    def test_switch_refusals_change_nothing(
        self, center: ConfigCenter, route: str, to: str, error: type[Exception], match: str
    ) -> None:
        before = center.route("orders")
        with pytest.raises(error, match=match):
            center.switch(route, to)
        assert center.route("orders") == before

    def test_switch_refuses_a_cluster_outside_the_route(self, center: ConfigCenter) -> None:
        center.put_cluster(kafka("kafka-c"))
        with pytest.raises(SwitchError, match="not one of route"):
            center.switch("orders", "kafka-c")

    def test_concurrent_switches_lose_no_update(self, center: ConfigCenter) -> None:
        outcomes: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(6)

        def flip(to: str) -> None:
            barrier.wait(timeout=10)
            for _ in range(5):
                try:
                    center.switch("orders", to)
                    result = "ok"
                except ConcurrentUpdateError:
                    result = "race"
                except SwitchError:
                    result = "noop"
                with lock:
                    outcomes.append(result)

        threads = [threading.Thread(target=flip, args=(("kafka-a", "kafka-b")[i % 2],)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        successes = outcomes.count("ok")
        assert len(outcomes) == 30 and successes >= 1
        # Every successful flip advanced the epoch by exactly one: no update was lost.
        assert center.route("orders").epoch == 1 + successes

    def test_snapshot_reports_invalid_documents(self, center: ConfigCenter, store: KVStore) -> None:
        store.put(center.keys.cluster("broken"), b"{not json")
        store.put(center.keys.route("bad"), json.dumps({"active": "x", "clusters": ["x"], "epoch": 1}).encode())
        snap = center.snapshot()
        assert set(snap.clusters) == {"kafka-a", "kafka-b", "pulsar-a"}
        assert set(snap.routes) == {"orders"}
        problems = " | ".join(str(p) for p in snap.problems)
        assert "clusters/broken: malformed JSON" in problems
        assert "unknown cluster 'x'" in problems

    # -- watching --------------------------------------------------------------------------

    def test_watcher_delivers_flips_in_order(self, center: ConfigCenter) -> None:
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher:
            assert watcher.current("orders").epoch == 1  # type: ignore[union-attr]
            for to in ("kafka-b", "kafka-a", "kafka-b"):
                center.switch("orders", to)
            got = [changes.take() for _ in range(3)]
            assert [(c.route.active, c.route.epoch) for c in got] == [("kafka-b", 2), ("kafka-a", 3), ("kafka-b", 4)]
            assert [c.previous.epoch for c in got] == [1, 2, 3]  # type: ignore[union-attr]
            assert got[0].revision < got[1].revision < got[2].revision
            changes.assert_empty()

    @pytest.mark.parametrize(
        ("value", "reason"),
        [
            (b"{oops", "malformed JSON"),
            (b"[" * 10_000 + b"]" * 10_000, "nested deeper"),
            (b'{"active": "\xff"}', "not UTF-8"),
            (b'{"reason": "' + b"x" * 100_000 + b'"}', "larger than the limit"),
            (json.dumps({"active": "ghost", "clusters": ["ghost", "kafka-a"], "epoch": 9}).encode(), "unknown cluster"),
            (json.dumps({"active": "kafka-b", "clusters": ["kafka-a", "kafka-b"], "epoch": 1}).encode(), "not greater"),
            (
                json.dumps({"active": "pulsar-a", "clusters": ["kafka-a", "pulsar-a"], "epoch": 5}).encode(),
                "different kinds",
            ),
            (json.dumps({"active": "kafka-b", "clusters": ["kafka-a", "kafka-b"], "epoch": "7"}).encode(), "epoch"),
        ],
        ids=["malformed", "deep", "not-utf8", "huge", "unknown-cluster", "stale", "mixed-kinds", "epoch-text"],
    )
    def test_watcher_rejects_invalid_routes_and_keeps_the_current_one(
        self, center: ConfigCenter, store: KVStore, value: bytes, reason: str
    ) -> None:
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher, capture_logs() as logs:
            store.put(center.keys.route("orders"), value)
            # A valid flip written after the bad value proves the bad one was processed first.
            good = json.dumps({"active": "kafka-b", "clusters": ["kafka-a", "kafka-b"], "epoch": 10}).encode()
            store.put(center.keys.route("orders"), good)
            change = changes.take()
            assert (change.route.active, change.route.epoch) == ("kafka-b", 10)
            assert change.previous is not None and change.previous.epoch == 1, "the invalid value was delivered"
            changes.assert_empty()
            assert watcher.rejected == 1
        rejected = [e for e in logs if e["event"] == "route.rejected"]
        assert len(rejected) == 1 and reason in rejected[0]["reason"]

    def test_watcher_keeps_a_deleted_route(self, center: ConfigCenter, store: KVStore) -> None:
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher, capture_logs() as logs:
            store.delete(center.keys.route("orders"))
            center.create_route("other", ["kafka-a", "kafka-b"], "kafka-a")
            assert changes.take().route.name == "other"
            assert watcher.current("orders").active == "kafka-a"  # type: ignore[union-attr]
        assert any(e["event"] == "route.deleted" for e in logs)

    def test_watcher_resumes_from_its_last_revision(self, gated: tuple[GatedStore, ConfigCenter]) -> None:
        store, center = gated
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher:
            center.switch("orders", "kafka-b")
            assert changes.take().route.epoch == 2
            attempts = store.watch_attempts
            store.sever()
            wait_for(lambda: store.watch_attempts > attempts, 10, "the watcher to notice the break")
            center.switch("orders", "kafka-a")
            center.switch("orders", "kafka-b")
            store.reopen()
            got = [changes.take() for _ in range(2)]
            assert [(c.route.active, c.route.epoch) for c in got] == [("kafka-a", 3), ("kafka-b", 4)]
            changes.assert_empty()
            assert watcher.resyncs == 0 and watcher.reconnects >= 1

    def test_watcher_rereads_everything_after_compaction(self, gated: tuple[GatedStore, ConfigCenter]) -> None:
        store, center = gated
        changes = ChangeQueue()
        with center.watch_routes(changes) as watcher, capture_logs() as logs:
            store.sever()
            center.switch("orders", "kafka-b")
            latest = center.switch("orders", "kafka-a")
            _, revision = store.get_prefix(center.keys.namespace + "/")
            store.compact(revision)
            store.reopen()
            change = changes.take()
            # The intermediate epoch is gone with the history; the newest one is delivered once.
            assert change.route == latest and change.previous is not None and change.previous.epoch == 1
            changes.assert_empty()
            assert watcher.resyncs == 1
        assert any(e["event"] == "watch.compacted" for e in logs)
