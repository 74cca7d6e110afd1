"""Clients of one process share the config-center connection and the route watcher (per
settings and namespace), reference-counted: the last one to close closes them. No etcd: the
config center runs on a MemoryStore."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec, Route
from hotstandby.configcenter.store import Event, WatchStream
from hotstandby.errors import ConfigCenterUnavailable, ConfigError, ValidationError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteFollower
from hotstandby.failover.switching import SwitchState
from hotstandby.settings import Settings
from tests.support import ManualClock, capture_logs, wait_for

NS = "/share"
ROUTE = "orders"


class _CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.closes = 0

    def close(self) -> None:
        self.closes += 1
        super().close()


def _seed(center: ConfigCenter) -> None:
    for name in ("a", "b"):
        center.put_cluster(ClusterSpec(name=name, kind="kafka", url=f"127.0.0.1:{9 if name == 'a' else 10}"))
    center.create_route(ROUTE, ["a", "b"], "a")


def _options(client_id: str) -> ClientOptions:
    return ClientOptions(route=ROUTE, settings=Settings(namespace=NS), client_id=client_id)


def _watcher_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "hotstandby-route-watcher" and t.is_alive())


class _Recorder:
    def __init__(self) -> None:
        self.targets: list[Route] = []

    def __call__(self, current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
        self.targets.append(target)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_CountingStore]]:
    """``ConfigCenter.open`` on one MemoryStore; the list holds it once per call."""
    store = _CountingStore()
    _seed(ConfigCenter(store, NS))
    calls: list[_CountingStore] = []

    def open_memory(settings: Settings | None = None) -> ConfigCenter:
        calls.append(store)
        return ConfigCenter(store, settings.namespace if settings else NS)

    monkeypatch.setattr(ConfigCenter, "open", staticmethod(open_memory))
    yield calls


def _no_probe(follower: RouteFollower) -> RouteFollower:
    follower.target_answers = lambda target: None  # type: ignore[method-assign]  # no brokers here
    return follower


def test_followers_with_the_same_settings_share_one_connection_and_one_route_watcher(
    opened: list[_CountingStore],
) -> None:
    before = _watcher_threads()
    first, second = (_no_probe(RouteFollower(_options(f"c{i}"), "kafka")) for i in range(2))
    seen = [_Recorder(), _Recorder()]
    first.start(seen[0])
    second.start(seen[1])
    assert len(opened) == 1, f"{len(opened)} config-center connections for two clients of one process"
    assert _watcher_threads() - before == 1, "one route watcher per process and namespace"
    first.center.switch(ROUTE, "b", reason="test")
    wait_for(lambda: all(r.targets for r in seen), 5, "both followers to get the flip")
    first.close()
    assert opened[0].closes == 0, "closed while a client still uses it"
    second.center.switch(ROUTE, "a", reason="test")
    wait_for(lambda: len(seen[1].targets) == 2, 5, "the remaining follower to get the next flip")
    second.close()
    assert opened[0].closes == 1, "the last client closes the connection"
    wait_for(lambda: _watcher_threads() == before, 5, "the shared watcher to stop with the last client")
    third = RouteFollower(_options("c3"), "kafka")
    assert len(opened) == 2, "a client after the last one closed opens a new connection"
    third.close()


def test_a_center_passed_in_is_shared_by_its_followers_and_not_closed_by_them() -> None:
    store = _CountingStore()
    center = ConfigCenter(store, NS)
    _seed(center)
    before = _watcher_threads()
    followers = [_no_probe(RouteFollower(_options(f"c{i}"), "kafka", center=center)) for i in range(2)]
    seen = [_Recorder(), _Recorder()]
    for follower, recorder in zip(followers, seen, strict=True):
        follower.start(recorder)
    assert _watcher_threads() - before == 1
    center.switch(ROUTE, "b", reason="test")
    wait_for(lambda: all(r.targets for r in seen), 5, "both followers to get the flip")
    for follower in followers:
        follower.close()
    assert store.closes == 0, "the caller owns the center it passed in"
    assert center.route(ROUTE).active == "b"
    wait_for(lambda: _watcher_threads() == before, 5, "the watcher to stop with the last follower")


def test_waiting_for_peers_runs_on_the_clock_passed_in() -> None:
    center = ConfigCenter(MemoryStore(), NS)
    _seed(center)
    center.store.put(center.keys.client(ROUTE, "behind"), b'{"client": "behind", "epoch": 1, "state": "active"}')
    clock = ManualClock(100.0)
    follower = RouteFollower(_options("me"), "kafka", center=center, clock=clock)
    try:
        target = Route(name=ROUTE, clusters=("a", "b"), active="b", epoch=2)
        assert follower.await_peers(target, 30.0) == ["behind"]
        assert 30.0 <= clock.now - 100.0 < 31.0, "waited the timeout on the clock given"
        assert clock.sleeps[-2] > clock.sleeps[0], "polls back off"
    finally:
        follower.close()


def test_reading_the_route_retries_while_etcd_is_down_on_the_clock_passed_in() -> None:
    store = MemoryStore()
    center = ConfigCenter(store, NS)
    _seed(center)
    store.disconnect()
    clock = ManualClock(100.0)
    with pytest.raises(ConfigCenterUnavailable, match="did not answer within"):
        RouteFollower(_options("me"), "kafka", center=center, clock=clock)
    assert clock.now - 100.0 >= Settings().etcd_timeout
    assert len(clock.sleeps) > 3


def test_a_route_moved_outside_the_allow_list_is_rejected_and_a_later_valid_flip_applies() -> None:
    center = ConfigCenter(MemoryStore(), NS)
    _seed(center)
    center.put_cluster(ClusterSpec(name="evil", kind="kafka", url="127.0.0.1:11"))
    center.delete_route(ROUTE)
    center.create_route(ROUTE, ["a", "b", "evil"], "a")
    options = replace(_options("careful"), allowed_clusters=frozenset({"a", "b"}))
    follower = _no_probe(RouteFollower(options, "kafka", center=center))
    seen = _Recorder()
    try:
        with capture_logs() as logs:
            follower.start(seen)
            center.switch(ROUTE, "evil", reason="an etcd writer")
            wait_for(lambda: any(e["event"] == "route.rejected" for e in logs), 5, "the rejection")
            center.switch(ROUTE, "b", reason="the SRE")
            wait_for(lambda: bool(seen.targets), 5, "the valid flip")
        assert [t.active for t in seen.targets] == ["b"], "never moved to evil"
        rejected = [e for e in logs if e["event"] == "route.rejected"]
        assert len(rejected) == 1 and rejected[0]["to"] == "evil" and rejected[0]["log_level"] == "error"
    finally:
        follower.close()
    center.switch(ROUTE, "evil", reason="an etcd writer")
    with pytest.raises(ConfigError, match=r"not in hotstandby\.clusters\.allowed"):
        RouteFollower(options, "kafka", center=center)


def test_the_allow_list_comes_from_the_client_configuration() -> None:
    options, _ = ClientOptions.split({"hotstandby.route": ROUTE, "hotstandby.clusters.allowed": " a, b "}, role="p")
    assert options.allowed_clusters == {"a", "b"} and options.allows("a") and not options.allows("evil")
    with pytest.raises(ValidationError):
        ClientOptions.split({"hotstandby.route": ROUTE, "hotstandby.clusters.allowed": " , "}, role="p")


class _LaggingWatchStore(MemoryStore):
    """A store whose watch streams deliver nothing until ``released`` is set again (a watch
    event that has not reached the process yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()
        self.released.set()

    def watch_prefix(self, prefix: str, start_revision: int) -> WatchStream:
        stream = super().watch_prefix(prefix, start_revision)
        released = self.released

        class _Lagging(WatchStream):
            def get(self, timeout: float) -> list[Event]:
                return stream.get(timeout) if released.wait(min(timeout, 0.05)) else []

            def cancel(self) -> None:
                stream.cancel()

        return _Lagging()


def test_a_client_started_before_the_watch_shows_a_flip_starts_on_the_flipped_route() -> None:
    store = _LaggingWatchStore()
    center = ConfigCenter(store, NS)
    _seed(center)
    first = _no_probe(RouteFollower(_options("first"), "kafka", center=center))
    first_seen = _Recorder()
    first.start(first_seen)
    store.released.clear()
    center.switch(ROUTE, "b", reason="test")
    second = _no_probe(RouteFollower(_options("second"), "kafka", center=center))
    second_seen = _Recorder()
    try:
        assert (second.initial_route.active, second.initial_route.epoch) == ("b", 2)
        assert second.initial_cluster.name == "b", "connects to the cluster the route is on in etcd"
        second.start(second_seen)
        store.released.set()
        wait_for(lambda: bool(first_seen.targets), 5, "the first follower to get the flip")
        assert not second_seen.targets, "already on epoch 2: nothing to switch"
        assert second.route.epoch == 2
    finally:
        second.close()
        first.close()
