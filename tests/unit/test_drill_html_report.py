"""The drill's report page: what it is given to draw, and that it fetches nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hotstandby.drill.html_report import page_data, write_report
from hotstandby.drill.report import DrillReport, SwitchReport, Timeline
from hotstandby.drill.tally import Event, Tally


def report(system: str = "kafka", lost: int = 0) -> DrillReport:
    return DrillReport(
        system=system, produced=100, consumed=100 - lost, lost=lost, duplicated=0, redelivered=2, filtered=7,
        resent=5, failed_deliveries=0, replicated=1, consumers=2, seconds=4.2,
        switches=[SwitchReport("kafka-a", "kafka-b", 310.0, killed=True, at_s=1.5),
                  SwitchReport("kafka-b", "kafka-a", None, at_s=3.0)],
        timeline=Timeline({(0, "kafka-a"): 40, (1, "kafka-a"): 30, (2, "kafka-b"): 30},
                          [Event(1.4, "kill", "kafka-a"), Event(2.5, "restart", "kafka-a")]),
    )  # fmt: skip


def test_the_tally_counts_records_per_second_and_cluster_and_the_events() -> None:
    tally = Tally()
    for seq in range(5):
        tally.received(seq, "kafka-a")
    tally.received(9, None)  # moved while receiving
    tally.event("kill", "kafka-a")
    assert tally.per_second == {(0, "kafka-a"): 5, (0, "?"): 1}
    assert [(e.kind, e.what) for e in tally.events] == [("kill", "kafka-a")]
    assert 0 <= tally.events[0].at < 5


def test_the_page_is_given_each_part_its_counts_flips_events_and_series() -> None:
    combined = DrillReport.combine([report("kafka"), report("pulsar", lost=1)])
    parts = page_data([combined])
    assert [p["title"] for p in parts] == ["kafka drill", "pulsar drill"]
    assert [p["ok"] for p in parts] == [True, False]
    first = parts[0]
    assert first["counts"]["resent"] == 5 and first["counts"]["filtered"] == 7 and first["counts"]["lost"] == 0
    assert first["per_second"] == {"kafka-a": [[0, 40], [1, 30]], "kafka-b": [[2, 30]]}
    assert [(s["at_s"], s["latency_ms"], s["killed"]) for s in first["switches"]] == [
        (1.5, 310.0, True),
        (3.0, None, False),
    ]
    assert first["events"] == [{"at_s": 1.4, "kind": "kill", "what": "kafka-a"},
                               {"at_s": 2.5, "kind": "restart", "what": "kafka-a"}]  # fmt: skip


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    page = write_report([report()], tmp_path / "out").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing fetched at view time"
    data = re.search(r'<script id="drill-data" type="application/json">(.*?)</script>', page, re.S)
    assert data is not None and json.loads(data.group(1))[0]["counts"]["produced"] == 100


def test_data_cannot_end_the_script_element(tmp_path: Path) -> None:
    odd = DrillReport(**{**report().__dict__, "phase": "</script><b>x"})
    page = write_report([odd], tmp_path).read_text()
    assert page.count("</script>") == 2  # the data's and the drawing script's own
