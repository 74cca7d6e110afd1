from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from hotstandby import logs


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = pathlib.Path(__file__).parent / "integration"
    for item in items:
        if integration_dir in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    """The CLI configures logging when a test calls it in-process; undo that per test."""
    yield
    logs.reset()
