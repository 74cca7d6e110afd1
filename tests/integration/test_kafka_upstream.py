"""confluent-kafka-python's own tests through the Kafka facades: every test of its suite that
passes with confluent-kafka on the reference cluster passes with the facades in its place, or
docs/kafka-api.md (*confluent-kafka's own tests*) says why the facade differs, and on which
reference cluster. The tests are not in confluent-kafka's wheel: give a checkout of its
repository with ``--upstream-kafka DIR``. Each of the two runs gets a reference cluster of its
own (``--brokers`` says which), started here. A measurement of minutes, run by hand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hotstandby.refcluster import Ports, RefCluster

DOC = Path(__file__).parents[2] / "docs" / "kafka-api.md"
SECTION = "### confluent-kafka's own tests"
SHIM = Path(__file__).parents[1] / "upstream"
# The files of the suite that make producers and consumers (the admin client, the share
# consumer, Schema Registry and the asyncio classes' mocks are not the facades').
FILES = [
    "tests/test_Consumer.py", "tests/test_Producer.py", "tests/test_misc.py", "tests/test_threads.py",
    "tests/test_log.py", "tests/test_Wakeable.py", "tests/integration/consumer", "tests/integration/producer",
    "tests/integration/serialization", "tests/integration/integration_test.py",
]  # fmt: skip
_TEST_TIMEOUT_S = 120.0

Outcomes = dict[str, tuple[str, str]]  # test id -> (raw outcome, facade outcome and detail)


def junit_outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """test id (``file::name``) -> (passed|failed|skipped, the failure's last line)."""
    found = {}
    for case in ET.parse(path).iter("testcase"):
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None:
            lines = (problem.get("message") or "").strip().splitlines()
            found[name] = ("failed", lines[-1] if lines else "")
        elif case.find("skipped") is not None:
            found[name] = ("skipped", "")
        else:
            found[name] = ("passed", "")
    return found


def suite_python(checkout: Path, workdir: Path) -> str:
    """A virtual environment over this one with what the suite's conftest imports (Schema
    Registry's client) and its pytest plugins: not the project's dependencies."""
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    needs = [arg for name in ("schemaregistry", "avro", "json", "protobuf")
             for arg in ("-r", str(checkout / "requirements" / f"requirements-{name}.txt"))]  # fmt: skip
    subprocess.run([python, "-m", "pip", "install", "-q", *needs, "pytest-asyncio", "respx", "requests-mock"],
                   check=True, timeout=600)  # fmt: skip
    return python


def run_suite(
    checkout: Path, python: str, mode: str, brokers: str, workdir: Path, only: set[str] | None
) -> dict[str, tuple[str, str]]:
    """Each test in a pytest of its own (a test of that suite can wait in librdkafka without
    a limit, deaf to signals), on a reference cluster of this run's own; in facade mode, only
    the tests in ``only``."""
    rc = RefCluster(workdir / mode, Ports.free(), brokers=brokers)
    try:
        rc.up()
        route = {**rc.client_config("app"), "hotstandby.route": "orders", "hotstandby.namespace": rc.namespace}
        env = {**os.environ, "BROKERS": rc.cluster_spec("kafka-a").url, "HS_UPSTREAM_MODE": mode,
               "HS_CONFIG": json.dumps(route), "PYTHONPATH": os.pathsep.join([str(SHIM), str(checkout)])}  # fmt: skip
        env.pop("TEST_CONSUMER_GROUP_PROTOCOL", None)  # the classic protocol, on both clusters
        pytest_cmd = [
            python,
            "-m",
            "pytest",
            "-p",
            "hs_confluent_shim",
            "-p",
            "no:cacheprovider",
            "-q",
            "-o",
            "addopts=",
        ]
        listed = subprocess.run([*pytest_cmd, "--collect-only", *FILES], cwd=checkout, env=env, check=False,
                                capture_output=True, text=True, timeout=300).stdout  # fmt: skip
        found: dict[str, tuple[str, str]] = {}
        for test in (line for line in listed.splitlines() if "::" in line):
            if only is not None and test not in only:
                continue
            report = workdir / f"{mode}.xml"
            report.unlink(missing_ok=True)
            try:
                subprocess.run([*pytest_cmd, f"--junitxml={report}", test], cwd=checkout, env=env, check=False,
                               capture_output=True, timeout=_TEST_TIMEOUT_S)  # fmt: skip
                ran = junit_outcomes(report) if report.exists() else {}
                outcome = next(iter(ran.values()), ("failed", "no report"))
            except subprocess.TimeoutExpired:
                outcome = ("failed", f"no end within {_TEST_TIMEOUT_S:.0f} s")
            found[test] = outcome
            print(f"[measure] {mode} {test}: {outcome[0]} {outcome[1]}", flush=True)
        return found
    finally:
        rc.down()


def documented_differences(brokers: str) -> dict[str, str]:
    """test id -> why the facade differs on the ``brokers`` reference cluster, from the doc."""
    section = DOC.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w/.]+::[^`]+)` \| (lite|apache|both) \| (.+?) \|$", section, re.M)
    return {test: why for test, where, why in rows if where in (brokers, "both")}


def test_confluent_kafkas_own_tests_pass_through_the_facades(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    checkout = request.config.getoption("--upstream-kafka")
    if not checkout:
        pytest.skip("give a confluent-kafka-python checkout with --upstream-kafka DIR")
    brokers = request.config.getoption("--brokers")
    python = suite_python(Path(checkout), tmp_path)
    raw = run_suite(Path(checkout), python, "raw", brokers, tmp_path, None)
    passing_raw = {t for t, (outcome, _) in raw.items() if outcome == "passed"}
    through = run_suite(Path(checkout), python, "facade", brokers, tmp_path, passing_raw)
    differing = {t: through.get(t, ("missing", ""))[1] or through.get(t, ("missing", ""))[0]
                 for t in passing_raw if through.get(t, ("missing", ""))[0] != "passed"}  # fmt: skip
    for test in sorted(raw):
        print(f"[measure] {test}: raw {raw[test][0]}, facade {through.get(test, ('missing', ''))[0]} "
              f"{differing.get(test, '')}")  # fmt: skip
    explained = documented_differences(brokers)
    print(f"[measure] confluent-kafka's tests: {len(raw)}, passing raw {len(passing_raw)}, through the facades "
          f"{len(passing_raw) - len(differing)}, documented differences {len(explained)}")  # fmt: skip
    assert set(differing) <= set(explained), f"not passing through the facades, undocumented: {differing}"
    # A row whose test passed this time is reported, not failed: some differ in some runs only.
    print(f"[measure] documented but passing in this run: {sorted(set(explained) - set(differing))}")
