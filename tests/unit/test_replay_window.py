"""The producer's replay window: bounded by age and bytes, oldest out first."""

from __future__ import annotations

from hotstandby.failover.replay_window import ReplayWindow


def test_bytes_bound_drops_the_oldest_first() -> None:
    w: ReplayWindow[int] = ReplayWindow(max_age_ms=60_000, max_bytes=10)
    for i in range(6):
        w.add(i, 3)
    assert list(w) == [3, 4, 5] and w.bytes == 9


def test_age_bound_drops_what_was_acknowledged_too_long_ago() -> None:
    now = [100.0]
    w: ReplayWindow[str] = ReplayWindow(max_age_ms=50, max_bytes=1 << 20, clock=lambda: now[0])
    w.add("old", 1)
    now[0] += 0.04
    w.add("newer", 1)
    assert list(w) == ["old", "newer"]
    now[0] += 0.02
    w.add("new", 1)
    assert list(w) == ["newer", "new"]


def test_keep_filters_and_recounts_bytes() -> None:
    w: ReplayWindow[int] = ReplayWindow(max_age_ms=60_000, max_bytes=100)
    for i in range(10):
        w.add(i, i)
    assert w.keep(lambda r: r % 2 == 0) == 5
    assert list(w) == [0, 2, 4, 6, 8] and w.bytes == 20 and len(w) == 5
