from __future__ import annotations

import pathlib

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = pathlib.Path(__file__).parent / "integration"
    for item in items:
        if integration_dir in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
