"""The producer's outbox: pending → replay window → re-send, one rule for every system."""

from __future__ import annotations

from hotstandby.failover.outbox import Outbox, ReplicatedTo, Stored, replicated

SKEW = 5_000
Key = tuple[str, int, int]


def outbox(max_age_ms: int = 60_000, max_bytes: int = 1 << 20, now: list[float] | None = None) -> Outbox[Key, str]:
    clock = (lambda: now[0]) if now is not None else (lambda: 0.0)
    return Outbox(max_age_ms, max_bytes, clock=clock)


def stored(offset: int, acked_ms: int, topic: str = "orders", partition: int = 0, cluster: str = "a") -> Stored:
    return Stored(cluster, topic, partition, offset, acked_ms)


# -- the replication rule -------------------------------------------------------------------


def test_records_at_or_before_a_later_position_are_replicated() -> None:
    positions = {("orders", 0): ReplicatedTo(offset=41, written_ms=100_000)}
    assert replicated(stored(41, 90_000), "a", positions, SKEW)
    assert replicated(stored(0, 90_000), "a", positions, SKEW)
    assert not replicated(stored(42, 90_000), "a", positions, SKEW), "past the position: not copied yet"


def test_other_partitions_topics_and_clusters_are_not_covered() -> None:
    positions = {("orders", 0): ReplicatedTo(offset=41, written_ms=100_000)}
    assert not replicated(stored(1, 90_000, partition=1), "a", positions, SKEW)
    assert not replicated(stored(1, 90_000, topic="payments"), "a", positions, SKEW)
    assert not replicated(stored(1, 90_000), "a", {}, SKEW)
    # Stored on another cluster than the one replication copies from (e.g. re-sent there).
    assert not replicated(stored(1, 90_000, cluster="c"), "a", positions, SKEW)


def test_a_position_written_before_the_record_was_acknowledged_proves_nothing() -> None:
    # The source came back empty and counts from zero again: a position from before the
    # restart names offsets of records that no longer exist.
    stale = {("orders", 0): ReplicatedTo(offset=50_000, written_ms=100_000)}
    assert not replicated(stored(10, 120_000), "a", stale, SKEW)
    # Within the clock-skew margin it is not trusted either.
    assert not replicated(stored(10, 96_000), "a", stale, SKEW)
    assert replicated(stored(10, 94_999), "a", stale, SKEW)


# -- the window's bounds --------------------------------------------------------------------


def test_the_bytes_bound_drops_the_oldest_first() -> None:
    box = outbox(max_bytes=10)
    for i in range(6):
        box.add(("t", 0, i), f"r{i}")
        assert box.acknowledged(("t", 0, i), 3)
    assert list(box.window()) == ["r3", "r4", "r5"] and box.window_bytes == 9


def test_the_age_bound_drops_what_was_acknowledged_too_long_ago() -> None:
    now = [100.0]
    box = outbox(max_age_ms=50, now=now)
    for i, step in enumerate((0.0, 0.04, 0.02)):
        now[0] += step
        box.add(("t", 0, i), f"r{i}")
        box.acknowledged(("t", 0, i), 1)
    assert list(box.window()) == ["r1", "r2"]


# -- pending, acknowledged, refused ---------------------------------------------------------


def test_an_acknowledged_record_leaves_pending_for_the_window_once() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    assert (box.pending, box.in_window) == (1, 0)
    assert box.acknowledged(("t", 0, 0), 2)
    assert not box.acknowledged(("t", 0, 0), 2), "a second report of the same record changes nothing"
    assert (box.pending, box.in_window) == (0, 1)


def test_a_refused_record_of_the_application_leaves_the_outbox() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    assert not box.refused(("t", 0, 0), 2), "the application's own record: its callback reports it"
    assert (box.pending, box.in_window) == (0, 0)
    assert box.replay().records == []


# -- a switch -------------------------------------------------------------------------------


def test_a_switch_resends_pending_and_window_in_key_order_less_what_was_replicated() -> None:
    box = outbox()
    for seq in range(4):
        box.add(("t", 0, seq), f"p0-{seq}")
    box.add(("t", 1, 0), "p1-0")
    box.acknowledged(("t", 0, 0), 1, stored(10, 1_000, topic="t"))  # copied (position 10 below)
    box.acknowledged(("t", 0, 2), 1, stored(12, 1_000, topic="t"))  # past the position
    box.acknowledged(("t", 1, 0), 1)  # acknowledged without a position: never trimmed
    positions = {("t", 0): ReplicatedTo(offset=10, written_ms=10_000)}

    replay = box.replay("a", positions, SKEW)

    assert replay.trimmed == 1
    assert replay.records == ["p0-1", "p0-2", "p0-3", "p1-0"]
    assert (box.pending, box.own_pending, box.replaying, box.in_window) == (4, 2, 2, 0)


def test_without_positions_the_whole_window_is_resent() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1, stored(0, 1_000))
    assert box.replay().records == ["r0"]


def test_a_replay_acknowledged_by_the_new_cluster_enters_the_window_with_that_time() -> None:
    now = [0.0]
    box = outbox(max_age_ms=1_000, now=now)
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1)
    now[0] = 0.9
    box.replay()
    now[0] = 1.5  # past the first acknowledgement's window
    assert box.acknowledged(("t", 0, 0), 1)
    assert list(box.window()) == ["r0"], "protected for a whole window on the new cluster"
    assert box.replaying == 0
    # A second switch sends it again (the new cluster may fail before replicating it).
    assert box.replay().records == ["r0"]


def test_a_refused_replay_goes_back_into_the_window_for_the_next_switch() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1)
    box.replay()
    assert box.refused(("t", 0, 0), 1), "the application was told it was stored: the caller reports it"
    assert (box.pending, box.in_window, box.replay_failures) == (0, 1, 1)
    assert box.replay().records == ["r0"]


def test_records_still_pending_from_a_switch_before_are_sent_again_once() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1)
    box.add(("t", 0, 1), "r1")
    assert box.replay().records == ["r0", "r1"]
    assert box.replay().records == ["r0", "r1"], "nothing acknowledged in between: the same, once each"
    assert (box.pending, box.own_pending, box.replaying) == (2, 1, 1)


# -- flipping back to a cluster ------------------------------------------------------------


def _flipped_once() -> Outbox[Key, str]:
    """r0 and r1 acknowledged by a at offsets 10 and 11, re-sent to b by a switch, acknowledged there."""
    box = outbox()
    for seq in range(2):
        box.add(("t", 0, seq), f"r{seq}")
        box.acknowledged(("t", 0, seq), 1, stored(10 + seq, 1_000, topic="t"))
    assert box.replay("a").records == ["r0", "r1"]
    for seq in range(2):
        box.acknowledged(("t", 0, seq), 1, stored(40 + seq, 2_000, topic="t", cluster="b"))
    return box


def test_a_switch_back_keeps_what_the_cluster_acknowledged_before_and_still_holds() -> None:
    box = _flipped_once()
    assert box.stored_on("a") == {("t", 0): (10, 11)}
    assert box.stored_on("b") == {}

    replay = box.replay("b", held=lambda s: s.cluster == "a" and s.offset >= 11)  # offset 10 is gone

    assert replay.records == ["r0"] and replay.held == 1
    assert list(box.window()) == ["r1"], "kept: protected against the loss of a"
    # Back to b: b acknowledged r1 too, and holds it.
    assert box.stored_on("b") == {("t", 0): (41, 41)}
    assert box.replay("a", held=lambda s: s.cluster == "b").records == ["r0"]
    assert list(box.window()) == ["r1"]


def test_without_proof_that_the_cluster_still_holds_it_the_record_is_sent_again() -> None:
    box = _flipped_once()
    assert box.replay("b", held=lambda s: False).records == ["r0", "r1"]
    box = _flipped_once()
    assert box.replay("b").records == ["r0", "r1"], "no check: nothing is kept"


def test_a_record_acknowledged_on_one_cluster_only_is_not_held_anywhere() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1, stored(10, 1_000, topic="t"))
    assert box.stored_on("a") == {} and box.stored_on("b") == {}
    assert box.replay("a", held=lambda s: True).records == ["r0"]


def test_a_refused_replay_remembers_where_it_was_stored_before() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1, stored(10, 1_000, topic="t"))
    box.replay("a")
    assert box.refused(("t", 0, 0), 1), "back into the window"
    assert box.stored_on("a") == {("t", 0): (10, 10)}
    assert box.replay("b", held=lambda s: s.cluster == "a").records == [], "a still holds it"


def test_a_refused_replay_sent_again_elsewhere_still_counts_the_cluster_that_held_it() -> None:
    box = outbox()
    box.add(("t", 0, 0), "r0")
    box.acknowledged(("t", 0, 0), 1, stored(10, 1_000, topic="t"))
    box.replay("a")
    box.refused(("t", 0, 0), 1)  # b refused it: in the window, stored nowhere new
    assert box.replay("b").records == ["r0"], "to c"
    box.acknowledged(("t", 0, 0), 1, stored(5, 2_000, topic="t", cluster="c"))
    assert box.stored_on("a") == {("t", 0): (10, 10)}, "a acknowledged it first and may still hold it"


# -- aborted transactions -------------------------------------------------------------------


def test_records_of_an_aborted_transaction_are_forgotten_pending_or_in_the_window() -> None:
    box = outbox()
    for i in range(4):  # committed before: stay in the window
        box.add(("t", 0, i), f"c{i}")
        assert box.acknowledged(("t", 0, i), 2)
    aborted = [("t", 0, 4), ("t", 1, 0), ("t", 0, 5)]
    for key in aborted:
        box.add(key, f"a{key[1]}{key[2]}")
    assert box.acknowledged(("t", 1, 0), 2) and box.acknowledged(("t", 0, 4), 2)  # ("t", 0, 5) still pending
    assert box.forget([*aborted, ("t", 9, 9)]) == 3, "an unknown key is no error"
    assert (box.pending, box.in_window, box.window_bytes) == (0, 4, 8)
    assert box.replay().records == ["c0", "c1", "c2", "c3"], "a switch never sends them again"
    assert not box.acknowledged(("t", 0, 5), 2), "a late acknowledgement does not bring one back"
    assert box.in_window == 0


def test_forgetting_keeps_the_order_of_the_window_and_its_replays() -> None:
    box = outbox()
    for i in range(6):
        box.add(("t", 0, i), f"r{i}")
        box.acknowledged(("t", 0, i), 1)
    assert box.forget([("t", 0, 1), ("t", 0, 4)]) == 2  # not at the end: the walk goes further
    assert list(box.window()) == ["r0", "r2", "r3", "r5"] and box.window_bytes == 4
    box.replay()
    assert box.replaying == 4
    assert box.forget([("t", 0, 2)]) == 1
    assert (box.replaying, box.pending, box.own_pending) == (3, 3, 0)
