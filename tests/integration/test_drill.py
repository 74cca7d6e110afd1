"""``hotstandby drill`` on the reference cluster: a SIGKILLed primary, failback, two consumers."""

from __future__ import annotations

import json

import pytest

from hotstandby.cli import main
from hotstandby.refcluster import RefCluster


def test_drill_with_a_killed_primary_and_failback_loses_and_duplicates_nothing(
    refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["drill", "--system", "kafka", "--messages", "3000", "--switches", "3", "--kill-primary",
                 "--consumers", "2", "--timeout", "240", "--dir", str(refcluster.dir), "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert (report["produced"], report["consumed"]) == (3000, 3000)
    assert (report["lost"], report["duplicated"]) == (0, 0)
    assert code == 0 and report["ok"]
    # A -> B (after SIGKILL of kafka-a, restarted empty), B -> A (failback), A -> B.
    assert [(s["from"], s["to"], s["killed"]) for s in report["switches"]] == [
        ("kafka-a", "kafka-b", True), ("kafka-b", "kafka-a", False), ("kafka-a", "kafka-b", False)
    ]  # fmt: skip
    assert all(s["latency_ms"] is not None for s in report["switches"]), "records consumed after every flip"
    assert report["resent"] > 0, "the producer re-sent its unacknowledged records and replay window"
    assert report["filtered"] > 0, "copies and re-sent records of consumed ones were filtered"
    assert refcluster.is_up(), "the drill restarts the broker it killed"
