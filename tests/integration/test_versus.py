"""The anchors' comparison (``bench/versus.py``, docs/anchors.md) as a test, for the SDK rows:
a SIGKILL of the active broker with a flip, the failback to it once restarted, a planned flip —
consumers committing by hand as the anchors' do. Lost 0 and duplicated 0, per flip.

Each run draws a variant (records per commit, commit per record or per partition's newest,
consumers, negative acknowledgements) from a seed it prints: ``HOTSTANDBY_VERSUS_SEED=N``
runs that one again.
"""

from __future__ import annotations

import os
import random

import pytest

from hotstandby.drill import DrillOptions
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import new_run_id, run_drill
from hotstandby.drill.versus import KafkaVersus, PulsarVersus, Variant
from hotstandby.refcluster import RefCluster

pytestmark = [pytest.mark.apache, pytest.mark.real_tier_only]

FLIPS = [("kill", True), ("failback", False), ("planned", False)]


def _seed() -> int:
    given = os.environ.get("HOTSTANDBY_VERSUS_SEED")
    seed = int(given) if given else random.randrange(1_000_000)
    print(f"HOTSTANDBY_VERSUS_SEED={seed}")
    return seed


def _options(consumers: int) -> DrillOptions:
    # The anchors' flips and pacing (bench/versus.py), on half the records.
    return DrillOptions(
        messages=3000,
        switches=3,
        kill_primary=True,
        consumers=consumers,
        lockstep=True,
        rate=200,
        timeout_s=400,
        settle_s=10,
    )


def _check(report: DrillReport) -> None:
    per_flip = [(s.killed, s.duplicated) for s in report.switches]
    print(
        f"produced {report.produced}, consumed {report.consumed}, lost {report.lost} {report.lost_sample}, "
        f"duplicated {report.duplicated} per flip {per_flip}, filtered {report.filtered}"
    )
    assert (report.lost, report.lost_sample) == (0, [])
    assert [(killed, duplicated) for killed, duplicated in per_flip] == [(k, 0) for _, k in FLIPS]
    assert report.duplicated == 0
    assert report.consumed == report.produced == 3000
    assert all(s.latency_ms is not None for s in report.switches), "records consumed after every flip"


def test_kafka_consumers_committing_by_hand_lose_and_duplicate_nothing_across_the_anchors_flips(
    refcluster: RefCluster,
) -> None:
    rnd = random.Random(_seed())
    low = rnd.randint(1, 10)
    variant = Variant(batch=(low, low + rnd.randint(0, 30)), per_record=rnd.random() < 0.25, seed=rnd.randrange(100))
    consumers = rnd.randint(1, 3)
    print(variant, f"consumers={consumers}")
    _check(run_drill(refcluster, _options(consumers), KafkaVersus(new_run_id(), raw=False, variant=variant)))


def test_pulsar_consumers_acknowledging_out_of_order_lose_and_duplicate_nothing_across_the_anchors_flips(
    refcluster: RefCluster,
) -> None:
    rnd = random.Random(_seed())
    variant = Variant(nack_share=rnd.choice([0.0, 0.02, 0.05, 0.1]), seed=rnd.randrange(100))
    consumers = rnd.randint(1, 3)
    print(variant, f"consumers={consumers}")
    _check(run_drill(refcluster, _options(consumers), PulsarVersus(new_run_id(), raw=False, variant=variant)))
