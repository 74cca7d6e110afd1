"""``hotstandby drill`` on the reference cluster: a SIGKILLed primary, failback, two consumers;
the Spark drill's SIGKILLed driver."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from hotstandby.cli import main
from hotstandby.refcluster import RefCluster


def drill(rc: RefCluster, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """``hotstandby drill ARGS --dir <the test cluster> --json -v``: exit status and report (the
    report and the SDK's info log are printed, for pytest to show when the test fails)."""
    code = main(["drill", *args, "--dir", str(rc.dir), "--json", "-v"])
    out = capsys.readouterr()
    sys.stderr.write(out.err)
    print(out.out)
    return code, json.loads(out.out)


@pytest.mark.apache
def test_drill_with_a_killed_primary_and_failback_loses_and_duplicates_nothing(
    refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = drill(refcluster, capsys, "--system", "kafka", "--messages", "3000", "--switches", "3",
                         "--kill-primary", "--consumers", "2", "--timeout", "240")  # fmt: skip
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
    if refcluster.brokers == "apache":
        # The restarted coordinator loads the members the consumers left there when it died;
        # they are removed before the failback joins (adapters/kafka/consumer/stale_members.py), so the
        # join does not wait for their session timeout (45 s).
        assert report["switches"][1]["latency_ms"] < 30_000, report["switches"]


@pytest.mark.apache
def test_pulsar_drill_with_a_killed_primary_loses_and_duplicates_nothing(
    refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """First a Shared subscription, three consumers acknowledging out of order, some negative
    acks; then an Exclusive one acknowledging cumulatively. Each part flips the route three
    times, the first after a SIGKILL of the active broker."""
    code, report = drill(refcluster, capsys, "--system", "pulsar", "--messages", "3000", "--switches", "3",
                         "--kill-primary", "--consumers", "3", "--rate", "300", "--timeout", "240")  # fmt: skip
    shared, exclusive = report["phases"]
    assert (shared["phase"], shared["consumers"], exclusive["phase"], exclusive["consumers"]) == (
        "shared, individual acks out of order", 3, "exclusive, cumulative acks", 1
    )  # fmt: skip
    for part in (shared, exclusive):
        assert (part["system"], part["produced"], part["consumed"]) == ("pulsar", 3000, 3000)
        assert (part["lost"], part["duplicated"]) == (0, 0)
        assert [(s["from"], s["to"], s["killed"]) for s in part["switches"]] == [
            ("pulsar-a", "pulsar-b", True), ("pulsar-b", "pulsar-a", False), ("pulsar-a", "pulsar-b", False)
        ]  # fmt: skip
        assert part["filtered"] > 0 and part["resent"] > 0
        assert all(s["latency_ms"] is not None for s in part["switches"]), "records consumed after every flip"
    assert shared["redelivered"] > 0, "negatively acknowledged messages came again"
    assert (report["produced"], report["lost"], report["duplicated"]) == (6000, 0, 0)
    assert code == 0 and report["ok"]
    assert refcluster.is_up()


@pytest.mark.apache
def test_spark_drill_with_a_killed_primary_and_a_killed_driver_loses_and_duplicates_nothing(
    refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """One streaming query of the Spark source (its own process, an idempotent foreachBatch
    sink) reads what the SDK producer writes while the route flips twice: the first after a
    SIGKILL of kafka-a, the failback to kafka-a (back, empty) after a SIGKILL of the query's
    driver, which starts again from its checkpoint (taken at the older epoch) once the flip is
    made, drains kafka-b (kafka-a's records from before its death are only there now), and
    reads on kafka-a what the producer writes after it. The Pulsar route's Spark drill runs
    from the command line (README)."""
    pytest.importorskip("pyspark")
    code, report = drill(refcluster, capsys, "--system", "spark", "--messages", "3000", "--switches", "2",
                         "--kill-primary", "--rate", "300", "--timeout", "300")  # fmt: skip
    assert (report["system"], report["consumers"]) == ("spark", 1)
    assert (report["produced"], report["consumed"]) == (3000, 3000)
    assert (report["lost"], report["duplicated"]) == (0, 0)
    assert code == 0 and report["ok"]
    assert [(s["from"], s["to"], s["killed"]) for s in report["switches"]] == [
        ("kafka-a", "kafka-b", True), ("kafka-b", "kafka-a", False)
    ]  # fmt: skip
    assert report["switches"][-1]["latency_ms"] is not None, "the restarted query read on kafka-a"
    assert report["phase"].startswith("route orders (kafka), ")
    assert "driver SIGKILLed before switch 2 and restarted from its checkpoint" in report["phase"]


def test_a_secure_drill_is_refused_on_a_cluster_started_without_it(
    refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["drill", "--secure", "--system", "kafka", "--dir", str(refcluster.dir), "--json"])
    assert code == 2
    assert "is up without --secure" in capsys.readouterr().err


@pytest.mark.parametrize("system", [["--system", "pulsar"], ["--system", "kafka"], []])
def test_a_route_is_refused_for_a_drill_other_than_spark(
    system: list[str], refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["drill", *system, "--route", "payments", "--dir", str(refcluster.dir), "--json"])
    assert code == 2
    assert "--route applies to --system spark only" in capsys.readouterr().err


@pytest.mark.parametrize("system", [["--system", "pulsar"], ["--system", "kafka"], []])
def test_a_spark_master_is_refused_for_a_drill_other_than_spark(
    system: list[str], refcluster: RefCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["drill", *system, "--spark-master", "spark://127.0.0.1:7077", "--dir", str(refcluster.dir),
                 "--json"])  # fmt: skip
    assert code == 2
    assert "--spark-master applies to --system spark only" in capsys.readouterr().err
