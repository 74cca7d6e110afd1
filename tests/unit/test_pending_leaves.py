"""PendingLeaves: members joining a group wait for the members leaving it on that cluster."""

from __future__ import annotations

import threading
import time

from hotstandby.adapters.kafka.group_leave import PendingLeaves
from hotstandby.configcenter import ConfigCenter, MemoryStore


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
