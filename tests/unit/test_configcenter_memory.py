"""The config-center contract on the in-memory store, plus memory-only fault cases."""

from __future__ import annotations

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.errors import ConfigCenterUnavailable
from tests.contract.configcenter import ConfigCenterContract
from tests.contract.fencing import FencingContract


class TestMemoryConfigCenter(ConfigCenterContract, FencingContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()

    @pytest.fixture
    def namespace(self) -> str:
        return "/hs-unit"


def test_watcher_start_gives_up_after_its_timeout_when_the_store_is_down() -> None:
    store = MemoryStore()
    store.disconnect()
    with pytest.raises(ConfigCenterUnavailable):
        ConfigCenter(store, "/ns").watch_routes(timeout=0.5).stop()
