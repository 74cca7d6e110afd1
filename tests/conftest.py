from __future__ import annotations

import logging
import os
import pathlib
import sys
from collections.abc import Iterator

import pytest

from hotstandby import logs


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--brokers",
        choices=("lite", "apache"),
        default="lite",
        help="the reference cluster the integration tests start: lite (look-alike brokers, default) or apache "
        "(Apache Kafka with MirrorMaker 2, Apache Pulsar with geo-replication); the real-broker tier is "
        "`pytest --brokers apache -m apache`",
    )
    parser.addoption(
        "--settings",
        choices=("test", "production"),
        default="test",
        help="the real systems' settings for the apache reference cluster the tests start: test (default) or "
        "production (their defaults where one node allows it, docs/refcluster.md)",
    )
    for kind in ("kafka", "pulsar"):
        parser.addoption(
            f"--{kind}-version",
            metavar="X.Y.Z",
            help=f"the Apache {kind.capitalize()} version the apache reference cluster runs (default: the shipped one)",
        )
    parser.addoption(
        "--refcluster-dir",
        help="use the reference cluster already up in this directory (`hotstandby refcluster up --dir DIR`) "
        "instead of starting one; it is left running",
    )
    parser.addoption(
        "--upstream-kafka",
        metavar="DIR",
        help="a checkout of confluent-kafka-python: run its own tests with confluent-kafka and through the "
        "facades, and compare (docs/kafka-api.md)",
    )
    parser.addoption(
        "--upstream-pulsar",
        metavar="DIR",
        help="a checkout of pulsar-client-python: run its own tests with pulsar-client and through the facades, "
        "and compare (docs/pulsar-api.md)",
    )


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject.toml): two worker processes on a lite reference cluster each,
    files kept together (``--dist loadfile``). The suite mostly waits on brokers, replication
    and timeouts — the machine is idle most of the run — so two halve its time. The real-broker
    tier, and a run on a cluster already up, stay in one process: an Apache cluster per worker
    would not fit beside another, and one shared cluster would see the other's kills."""
    shared = config.getoption("--refcluster-dir") or config.getoption("--brokers") != "lite"
    return 0 if shared else 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = pathlib.Path(__file__).parent / "integration"
    apache = config.getoption("--brokers") == "apache"
    for item in items:
        if integration_dir in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
        if apache and item.get_closest_marker("lite_only"):
            item.add_marker(pytest.mark.skip(reason="shows a behaviour of the lite reference cluster"))
        if not apache and item.get_closest_marker("apache_only"):
            item.add_marker(pytest.mark.skip(reason="needs what only the real brokers serve"))
        if not apache and item.get_closest_marker("real_tier_only"):
            item.add_marker(pytest.mark.skip(reason="runs in the real-broker tier (pytest --brokers apache -m apache)"))


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    """The CLI configures logging when a test calls it in-process; undo that per test."""
    yield
    logs.reset()


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Registered first, so it runs last of pytest's own cleanups.
    config.add_cleanup(_exit_without_teardown)


def _exit_without_teardown() -> None:
    """End the run without the interpreter's teardown. pulsar-client's C++ core may still be
    ending a closed client's shutdown thread when the process exits, and then aborts it
    ("terminate called without an active exception", apache/pulsar-client-python#256), which
    turns a finished run into exit code 134. Every process the tests started is stopped by
    then (the fixtures stop them by PID)."""
    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(_EXIT_STATUS[-1])
