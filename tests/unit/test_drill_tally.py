"""The drill's bookkeeping: what counts as lost, duplicated, redelivered, and switch latency."""

from __future__ import annotations

import json

from hotstandby.drill import DrillReport, SwitchReport
from hotstandby.drill.tally import Tally


def test_lost_is_produced_minus_acknowledged() -> None:
    t = Tally()
    for seq in range(5):
        t.delivered(seq, ok=True)
    t.delivered(5, ok=False)  # the producer was told: not expected downstream
    for seq in (0, 1, 3):
        t.received(seq, "a")
    t.acknowledged([0, 1, 3])
    t.received(2, "a")  # handed out, never acknowledged
    assert t.lost() == [2, 4]
    assert t.counts() == (5, 3)


def test_delivery_after_acknowledgement_is_a_duplicate_before_it_is_a_redelivery() -> None:
    t = Tally()
    t.received(7, "a")
    t.received(7, "a")  # not acknowledged yet: at-least-once redelivery
    t.acknowledged([7])
    t.received(7, "b")  # acknowledged already: a duplicate
    assert (t.redelivered, t.duplicated, t.deliveries) == (1, 1, 3)
    assert t.duplicated_sample == [7]


def test_duplicates_count_against_the_flip_they_follow() -> None:
    t = Tally()
    t.received(1, "a")
    t.acknowledged([1])
    t.received(1, "a")  # before any flip: the drill's total only
    t.flip("a", "b")
    t.received(1, "b")
    t.received(1, "b")
    second = t.flip("b", "a")
    t.received(1, "a")
    assert t.duplicated == 4
    assert [m.duplicated for m in t.switches] == [2, 1]
    assert second.duplicated == 1


def test_switch_latency_is_first_record_on_the_new_cluster_after_the_flip() -> None:
    t = Tally()
    mark = t.flip("a", "b")
    t.received(1, "a")  # still on the old cluster: does not count
    t.received(3, None)  # the consumer moved while receiving it: either cluster, does not count
    assert mark.latency_ms is None
    t.received(2, "b")
    first = mark.latency_ms
    assert first is not None and first >= 0
    t.received(3, "b")
    assert mark.latency_ms == first


def test_report_fails_on_loss_or_duplicate_and_serializes_the_documented_keys() -> None:
    base = dict(system="kafka", produced=10, consumed=10, lost=0, duplicated=0, redelivered=0, filtered=4,
                resent=2, failed_deliveries=0, replicated=1, consumers=2, seconds=1.0,
                switches=[SwitchReport("kafka-a", "kafka-b", 12.5, killed=True, duplicated=3)])  # fmt: skip
    assert DrillReport(**base).ok  # type: ignore[arg-type]
    assert not DrillReport(**{**base, "lost": 1}).ok  # type: ignore[arg-type]
    assert not DrillReport(**{**base, "duplicated": 1}).ok  # type: ignore[arg-type]
    assert not DrillReport(**{**base, "produced": 0, "consumed": 0}).ok  # type: ignore[arg-type]
    data = json.loads(json.dumps(DrillReport(**base).to_dict()))  # type: ignore[arg-type]
    for key in ("produced", "consumed", "lost", "duplicated", "filtered", "resent", "replicated", "switches"):
        assert key in data
    assert data["switches"] == [{"from": "kafka-a", "to": "kafka-b", "latency_ms": 12.5, "killed": True,
                                 "duplicated": 3, "at_s": None}]  # fmt: skip
    assert "timeline" not in data
    assert "FAIL" in DrillReport(**{**base, "lost": 1, "lost_sample": [3]}).human()  # type: ignore[arg-type]


def test_a_record_whose_commit_was_refused_is_not_lost_and_may_come_again_once() -> None:
    t = Tally()
    t.delivered(1, True)
    t.received(1, "a")
    t.refused([1])  # processed; another member took the partition over before the commit
    assert t.lost() == [] and t.counts() == (1, 1)
    t.received(1, "b")  # the new owner hands it out again: what the refused commit warned of
    assert (t.redelivered, t.duplicated) == (1, 0)
    t.acknowledged([1])
    t.received(1, "b")  # committed by the new owner: another delivery is a duplicate
    assert t.duplicated == 1
