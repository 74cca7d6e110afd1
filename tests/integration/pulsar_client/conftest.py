"""The Pulsar facade tests' fixtures: a fresh topic the reference replicators copy both ways,
and a client of route ``payments`` on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE


@pytest.fixture
def topic(refcluster: RefCluster) -> str:
    """A fresh topic that the reference replicators copy both ways."""
    name = f"persistent://public/default/sdk-{uuid.uuid4().hex[:8]}"
    with ConfigCenter.open(replace(refcluster.settings())) as center:
        for cluster in ("pulsar-a", "pulsar-b"):
            center.register_topic(cluster, name)
    return name


@pytest.fixture
def client(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[Client]:
    made = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                  operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    yield made
    made.close()
