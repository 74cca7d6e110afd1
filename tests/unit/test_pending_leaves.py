"""PendingLeaves: members joining a group wait for the members leaving it on that cluster."""

from __future__ import annotations

import socket
import threading
import time
import uuid

from hotstandby.adapters.kafka.consumer.group_leave import PendingLeaves, leave_in_turn
from hotstandby.adapters.kafka.consumer.stale_members import STALE
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec


def test_marks_are_per_cluster_and_group_and_end_with_unmark() -> None:
    center = ConfigCenter(MemoryStore(), "/t")
    leaving = PendingLeaves(center, "kafka-b", "g/1")
    lease = leaving.mark("client a")
    PendingLeaves(center, "kafka-a", "g/1").mark("client b")
    PendingLeaves(center, "kafka-b", "g/10").mark("client c")
    assert leaving.pending() == ["client a"], "another cluster or group is not this one"
    leaving.unmark(lease)
    assert leaving.pending() == []
    leaving.unmark(lease)  # twice is harmless


def test_wait_none_returns_once_the_last_leave_ended() -> None:
    center = ConfigCenter(MemoryStore(), "/t")
    leaving = PendingLeaves(center, "kafka-b", "g")
    leases = [leaving.mark(name) for name in ("a", "b")]

    def leave_one_after_the_other() -> None:
        for lease in leases:
            leaving.unmark(lease)

    timer = threading.Timer(0.3, leave_one_after_the_other)
    timer.start()
    started = time.monotonic()
    assert leaving.wait_none(timeout=10) == []
    assert 0.25 <= time.monotonic() - started < 5, "waited for the leaves, not for the timeout"
    timer.join()


def test_wait_none_gives_up_after_its_timeout_and_names_who_is_still_leaving() -> None:
    center = ConfigCenter(MemoryStore(), "/t")
    leaving = PendingLeaves(center, "kafka-b", "g")
    leaving.mark("stuck")
    started = time.monotonic()
    assert leaving.wait_none(timeout=0.3) == ["stuck"]
    assert time.monotonic() - started < 3


def test_a_member_that_dies_while_leaving_stops_counting_when_its_lease_expires() -> None:
    store = MemoryStore()
    leaving = PendingLeaves(ConfigCenter(store, "/t"), "kafka-b", "g", ttl_s=1)
    leaving.mark("crashed")
    assert leaving.wait_none(timeout=5) == []


class _Member:
    """A consumer leaving: records when it was closed."""

    def __init__(self, events: list[str], member: str = "rdkafka-m1") -> None:
        self.events = events
        self.member = member

    def poll(self, timeout: float) -> None:
        self.events.append("poll")

    def memberid(self) -> str:
        return self.member

    def unsubscribe(self) -> None:
        self.events.append("unsubscribe")

    def assignment(self) -> list[object]:
        return []

    def close(self) -> None:
        self.events.append("close")


def _dead_address() -> str:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_leave_from_a_cluster_that_does_not_answer_stops_holding_joins_before_closing() -> None:
    """Closing a consumer of a dead broker can take long; its group went with the broker, so
    members joining the restarted one need not wait for it."""
    events: list[str] = []
    spec = ClusterSpec(name="kafka-a", kind="kafka", url=_dead_address())
    member = f"rdkafka-{uuid.uuid4().hex[:6]}"
    leave_in_turn(_Member(events, member), spec=spec, group="g", lock=None, timeout=5,
                  harmless=lambda: events.append("harmless"))  # fmt: skip
    # Idle before it closes: an assignment served during close hangs librdkafka (raw_close).
    assert events == ["harmless", "unsubscribe", "poll", "close"]
    # Left behind in the group there: removed before a consumer joins it again.
    assert member in STALE.pending("kafka-a", "g")


class _StuckClose(_Member):
    """A consumer whose close waits, as librdkafka's does for a commit in flight to a
    coordinator that is gone (up to session.timeout.ms)."""

    def __init__(self) -> None:
        super().__init__([], "rdkafka-stuck")
        self.released = threading.Event()

    def close(self) -> None:
        self.released.wait(60)


def test_a_leave_from_a_cluster_that_does_not_answer_does_not_wait_for_the_commit_in_flight() -> None:
    """What the commit carries is in the ledgers already: the leave returns at once, and the
    close goes on in the background."""
    member = _StuckClose()
    spec = ClusterSpec(name="kafka-a", kind="kafka", url=_dead_address())
    leaving = threading.Thread(
        target=leave_in_turn, kwargs={"raw": member, "spec": spec, "group": "g", "lock": None, "timeout": 25},
        daemon=True,
    )  # fmt: skip
    try:
        leaving.start()
        leaving.join(10)
        assert not leaving.is_alive(), "the leave waited for the consumer's close"
    finally:
        member.released.set()
