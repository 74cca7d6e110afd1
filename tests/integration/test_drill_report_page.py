"""The drill's report page in a browser: Debian's Chromium, headless, opens the page from disk
(no network) and the test reads what its script drew (``--dump-dom``)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hotstandby.drill.html_report import write_report
from hotstandby.drill.report import DrillReport
from tests.unit.test_drill_html_report import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install chromium)")


def drawn(page: Path, profile: Path) -> str:
    """The page's DOM once its script ran."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


def section(dom: str, index: int) -> str:
    found = re.search(rf'<section id="part-{index}">(.*?)</section>', dom, re.S)
    assert found is not None, f"part {index} was not drawn"
    return found.group(1)


def test_the_report_page_draws_each_part_in_chromium(tmp_path: Path) -> None:
    page = write_report([DrillReport.combine([report("kafka"), report("pulsar", lost=1)])], tmp_path / "report")
    dom = drawn(page, tmp_path / "profile")
    assert 'data-drawn="2"' in dom, "the script ran to its end"
    kafka, pulsar = section(dom, 0), section(dom, 1)
    assert '<h2 class="pass">PASS kafka drill</h2>' in kafka and '<h2 class="fail">FAIL pulsar drill</h2>' in pulsar
    assert re.search(r'data-count="lost">1<', pulsar) and re.search(r'data-count="resent">5<', kafka)
    bars = re.findall(r'<rect [^>]*class="bar" data-cluster="([^"]+)"', kafka)
    assert sorted(bars) == ["kafka-a", "kafka-a", "kafka-b"], "one bar per second and cluster with records"
    assert kafka.count('class="flip"') == 2 and "kafka-a → kafka-b: 310 ms" in kafka
    assert "kafka-b → kafka-a: no record" in kafka
    assert kafka.count('class="kill"') == 1 and kafka.count('class="restart"') == 1
