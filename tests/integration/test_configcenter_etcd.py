"""The config-center contract on the reference cluster's real etcd."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hotstandby.configcenter.etcd import EtcdStore
from hotstandby.refcluster import RefCluster
from tests.contract.configcenter import ConfigCenterContract
from tests.contract.fencing import FencingContract


class TestEtcdConfigCenter(ConfigCenterContract, FencingContract):
    @pytest.fixture
    def store(self, refcluster: RefCluster) -> Iterator[EtcdStore]:
        store = EtcdStore(refcluster.settings().etcd, timeout=5.0)
        yield store
        store.close()
