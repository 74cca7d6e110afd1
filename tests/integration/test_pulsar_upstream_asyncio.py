"""pulsar-client-python's own asyncio tests through the asyncio facade: every test of its
``tests/asyncio_test.py`` that passes with ``pulsar.asyncio`` on the reference cluster passes
with the facade in its place, or docs/pulsar-api.md (*pulsar-client's asyncio tests*) says
why the facade differs. The tests are not in pulsar-client's wheel: give a checkout of its
repository with ``--upstream-pulsar DIR``."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster

DOC = Path(__file__).parents[2] / "docs" / "pulsar-api.md"
_TIMEOUT_S = 30.0  # a test of that suite waits without a limit (receive()) when nothing comes


def upstream_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    case = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AsyncioTest")
    return [
        f.name
        for f in case.body
        if isinstance(f, ast.AsyncFunctionDef | ast.FunctionDef) and f.name.startswith("test_")
    ]


def documented_differences() -> dict[str, str]:
    """test name -> why, from the doc's table."""
    section = DOC.read_text().split("### pulsar-client's asyncio tests", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(test_\w+)` \| (.+?) \|$", section, re.M))


def run(file: Path, mode: str, test: str, argv: list[str]) -> dict[str, str]:
    try:
        done = subprocess.run([sys.executable, "-m", "tests.upstream.run_one", str(file), mode, test, *argv],
                              check=False, capture_output=True, text=True, timeout=_TIMEOUT_S,
                              cwd=DOC.parents[1])  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"outcome": "failed", "detail": f"no end within {_TIMEOUT_S:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"outcome": "failed", "detail": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    outcome: dict[str, str] = json.loads(lines[-1])
    return outcome


def test_pulsar_clients_own_asyncio_tests_pass_through_the_facade(
    request: pytest.FixtureRequest, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    checkout = request.config.getoption("--upstream-pulsar")
    if not checkout:
        pytest.skip("give a pulsar-client-python checkout with --upstream-pulsar DIR")
    file = Path(checkout) / "tests" / "asyncio_test.py"
    spec = refcluster.cluster_spec("pulsar-a")
    http = getattr(refcluster.ports, "pulsar_a_http", None) if refcluster.brokers == "apache" else None
    argv = ["--service-url", spec.url, "--admin-url", f"http://127.0.0.1:{http or 1}",
            "--etcd", f"127.0.0.1:{refcluster.ports.etcd}", "--namespace", namespace, "--route", "payments"]  # fmt: skip
    results = {}
    for test in upstream_tests(file):
        raw, through = results[test] = run(file, "raw", test, argv), run(file, "facade", test, argv)
        print(f"[measure] {test}: raw {raw['outcome']}, facade {through['outcome']} {through.get('detail', '')}",
              flush=True)  # fmt: skip
    passing_raw = {t for t, (raw, _) in results.items() if raw["outcome"] == "passed"}
    differing = {t: through.get("detail", "") for t, (raw, through) in results.items()
                 if t in passing_raw and through["outcome"] != "passed"}  # fmt: skip
    explained = documented_differences()
    print(f"[measure] pulsar-client asyncio tests: {len(results)}, passing raw {len(passing_raw)}, "
          f"through the facade {len(passing_raw) - len(differing)}, documented differences {len(explained)}")  # fmt: skip
    assert set(differing) <= set(explained), f"not passing through the facade, undocumented: {differing}"
    assert not set(explained) - set(differing), f"documented but passing now: {set(explained) - set(differing)}"
