from __future__ import annotations

import pathlib
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
