"""Switch events: the event object, the ``hotstandby.on_switch`` callback (its thread, its
errors), the switcher's and the follower's reports, and the metrics they update. No
processes: switches run on the in-memory adapter."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator

import pytest

import hotstandby
from hotstandby import metrics
from hotstandby.adapters.memory.consumer import Consumer
from hotstandby.adapters.memory.producer import Producer
from hotstandby.adapters.memory.world import World
from hotstandby.configcenter import RouteChange
from hotstandby.configcenter.documents import Route
from hotstandby.errors import ValidationError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.switch_events import ClientCounts, SwitchEvent, SwitchEvents, SwitchPhase
from hotstandby.failover.switching import Switcher, SwitchState
from tests.support import capture_logs, wait_for

ROUTE, TOPIC = "ev", "t"


def _event(phase: SwitchPhase = SwitchPhase.STARTED, **fields: object) -> SwitchEvent:
    base: dict[str, object] = dict(phase=phase, route=ROUTE, client_id="c1", role="producer", from_cluster="a",
                                   to_cluster="b", from_epoch=1, to_epoch=2)  # fmt: skip
    return SwitchEvent(**{**base, **fields})  # type: ignore[arg-type]


class Collected:
    """An on_switch callback that keeps the events and the threads it ran on."""

    def __init__(self, fail: Callable[[SwitchEvent], bool] = lambda e: False) -> None:
        self.events: list[SwitchEvent] = []
        self.threads: list[str] = []
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, event: SwitchEvent) -> None:
        with self.lock:
            self.events.append(event)
            self.threads.append(threading.current_thread().name)
        if self.fail(event):
            raise RuntimeError(f"application bug at {event.phase.value}")

    def phases(self) -> list[str]:
        with self.lock:
            return [e.phase.value for e in self.events]


def test_the_event_is_a_frozen_public_value() -> None:
    event = _event(SwitchPhase.COMPLETED, duration_s=0.25, resent=3)
    assert hotstandby.SwitchEvent is SwitchEvent and hotstandby.SwitchPhase is SwitchPhase
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.phase = SwitchPhase.FAILED  # type: ignore[misc]
    assert event.phase == "completed" and event.duration_s == 0.25 and event.resent == 3 and event.filtered == 0
    assert [p.value for p in SwitchPhase] == ["started", "completed", "failed", "rejected"]
    with pytest.raises(TypeError):
        SwitchEvent(SwitchPhase.STARTED, ROUTE, "c1", "producer", "a", "b", 1, 2)  # type: ignore[misc]


def test_on_switch_must_be_callable() -> None:
    with pytest.raises(ValidationError, match="on_switch"):
        ClientOptions.split({"hotstandby.route": ROUTE, "hotstandby.on_switch": "print"}, role="producer")
    options, rest = ClientOptions.split({"hotstandby.route": ROUTE, "hotstandby.on_switch": print}, role="producer")
    assert options.on_switch is print and "hotstandby.on_switch" not in rest


def test_the_callback_runs_on_its_own_thread_in_order_and_its_errors_never_reach_the_caller() -> None:
    got = Collected(fail=lambda e: e.phase is SwitchPhase.FAILED)
    events = SwitchEvents("c1", "producer", got, lambda: ClientCounts(resent=7, filtered=2))
    before = metrics.snapshot()["hotstandby_switch_callback_errors_total"].value(route=ROUTE)
    with capture_logs() as logs:
        events.emit(_event(SwitchPhase.STARTED, role=""))
        for attempt in (1, 2, 3):
            events.emit(_event(SwitchPhase.FAILED, attempt=attempt, error="refused"))  # the callback raises
        events.emit(_event(SwitchPhase.COMPLETED, duration_s=1.0))
        assert events.wait_delivered(5, 5.0)
        events.close()
    assert got.phases() == ["started", "failed", "failed", "failed", "completed"]
    assert set(got.threads) == {"hotstandby-events-c1"}
    assert all(e.role == "producer" and e.filtered == 2 for e in got.events)
    assert got.events[-1].resent == 0, "resent counts what this switch re-sent: nothing since started"
    assert events.callback_errors == 3
    failures = [r for r in logs if r.get("event") == "switch.callback_failed"]
    assert len(failures) == 1 and failures[0]["phase"] == "failed", "logged once per phase and exception type"
    after = metrics.snapshot()["hotstandby_switch_callback_errors_total"].value(route=ROUTE)
    assert after - before == 3


def test_close_delivers_what_is_queued_and_later_events_are_dropped() -> None:
    release = threading.Event()
    got = Collected()

    def slow(event: SwitchEvent) -> None:
        release.wait(5)
        got(event)

    events = SwitchEvents("c2", "consumer", slow)
    events.emit(_event())
    events.emit(_event(SwitchPhase.COMPLETED))
    release.set()
    events.close()
    events.emit(_event(SwitchPhase.STARTED))
    assert got.phases() == ["started", "completed"]


def _route(active: str, epoch: int) -> Route:
    return Route(name=ROUTE, active=active, clusters=("a", "b"), epoch=epoch)


def test_the_switcher_reports_started_failed_and_completed_where_it_logs_them() -> None:
    reported: list[SwitchEvent] = []
    failures = [ConnectionError("new cluster refused")]

    def perform(current: Route, target: Route, set_state: Callable[[SwitchState], None]) -> None:
        if failures:
            raise failures.pop()

    sw = Switcher("p1", _route("a", 1), perform, on_event=reported.append, max_backoff=0.05)
    try:
        sw.offer(RouteChange(_route("b", 2), None, 2))
        assert sw.wait_idle(10)
    finally:
        sw.close()
    assert [e.phase for e in reported] == [SwitchPhase.STARTED, SwitchPhase.FAILED, SwitchPhase.COMPLETED]
    started, failed, completed = reported
    assert (started.from_cluster, started.to_cluster, started.from_epoch, started.to_epoch) == ("a", "b", 1, 2)
    assert failed.attempt == 1 and "new cluster refused" in (failed.error or "")
    assert completed.attempt == 2 and completed.duration_s is not None and completed.duration_s >= 0
    assert completed.duration_s == pytest.approx(sw.history[-1].duration_s)


@pytest.fixture
def world() -> Iterator[World]:
    w = World(("mem-a", "mem-b"))
    w.create_topic(TOPIC, 2)
    w.create_route(ROUTE, "mem-a")
    yield w
    w.store.disconnect()  # wakes the clients' watches: their threads stop at once
    w.close()


def _options(**extra: object) -> dict[str, object]:
    return {"hotstandby.route": ROUTE, "hotstandby.etcd.timeout.ms": 1000, **extra}


def test_a_producer_reports_its_switch_with_what_it_resent_and_the_metrics_count_it(world: World) -> None:
    got = Collected()
    before = metrics.snapshot()
    producer = Producer(_options(**{"hotstandby.on_switch": got, "hotstandby.client.id": "p-ev"}), center=world.center)
    try:
        assert metrics.snapshot()["hotstandby_client_cluster"].value(client="p-ev", cluster="mem-a") == 1
        for i in range(5):
            producer.produce(TOPIC, value=f"v{i}", key=f"k{i}")
        assert producer.flush(10) == 0
        flipped = world.flip(ROUTE, "mem-b")
        assert producer.wait_for_route(flipped.epoch, 5.0)
        wait_for(lambda: got.phases() == ["started", "completed"], 5, "started, then completed")
        started, completed = got.events
        for event in (started, completed):
            assert (event.route, event.client_id, event.role) == (ROUTE, "p-ev", "producer")
            assert (event.from_cluster, event.to_cluster) == ("mem-a", "mem-b")
            assert (event.from_epoch, event.to_epoch) == (flipped.epoch - 1, flipped.epoch)
        assert started.duration_s is None and completed.duration_s is not None
        assert completed.resent == producer.resent == 5, "the replay window's records, sent again"
        after = metrics.snapshot()
        assert after["hotstandby_client_cluster"].value(client="p-ev", cluster="mem-b") == 1
        assert after["hotstandby_client_cluster"].value(client="p-ev", cluster="mem-a") == 0
        assert after["hotstandby_client_epoch"].value(client="p-ev") == flipped.epoch
    finally:
        producer.close()
    after = metrics.snapshot()

    def grew(name: str, **labels: str) -> float:
        return after[name].value(**labels) - before[name].value(**labels)

    assert grew("hotstandby_switches_total", route=ROUTE, phase="started") == 1
    assert grew("hotstandby_switches_total", route=ROUTE, phase="completed") == 1
    assert grew("hotstandby_resent_records_total", route=ROUTE, role="producer") == 5
    assert (
        after["hotstandby_switch_duration_seconds"].count(route=ROUTE)
        - before["hotstandby_switch_duration_seconds"].count(route=ROUTE)
        == 1
    )
    assert after["hotstandby_client_cluster"].matching(client="p-ev") == [], "gone with the client"


def test_a_consumer_reports_what_it_filtered_and_the_metric_keeps_it_after_close(world: World) -> None:
    producer = Producer(_options(), center=world.center)
    consumer = Consumer(_options(**{"group.id": "g", "enable.auto.commit": False}), center=world.center)
    before = metrics.snapshot()["hotstandby_filtered_records_total"].value(route=ROUTE, role="consumer")
    try:
        consumer.subscribe([TOPIC])
        for i in range(3):
            producer.produce(TOPIC, value=f"v{i}", key=f"k{i}")
        assert producer.flush(10) == 0
        taken = []

        def take() -> bool:
            msg = consumer.poll(0)
            if msg is not None:
                taken.append(msg)
                consumer.commit(message=msg, asynchronous=False)
            return len(taken) == 3

        wait_for(take, 10, "three records")
        consumer._acks.filtered += 4  # as if four copies had been filtered
        now = metrics.snapshot()["hotstandby_filtered_records_total"].value(route=ROUTE, role="consumer")
        assert now - before == consumer._acks.filtered
    finally:
        consumer.close()
        producer.close()
    closed = metrics.snapshot()["hotstandby_filtered_records_total"].value(route=ROUTE, role="consumer")
    assert closed - before == 4, "a closed client's count stays in the counter"


def test_a_flip_to_a_cluster_not_allowed_is_reported_rejected(world: World) -> None:
    got = Collected()
    producer = Producer(_options(**{"hotstandby.on_switch": got, "hotstandby.clusters.allowed": "mem-a"}),
                        center=world.center)  # fmt: skip
    try:
        flipped = world.flip(ROUTE, "mem-b")
        wait_for(lambda: got.phases() == ["rejected"], 5, "a rejected event")
        [event] = got.events
        assert (event.from_cluster, event.to_cluster, event.to_epoch) == ("mem-a", "mem-b", flipped.epoch)
        assert event.error is not None and "allowed" in event.error
        assert producer.route.active == "mem-a"
    finally:
        producer.close()
