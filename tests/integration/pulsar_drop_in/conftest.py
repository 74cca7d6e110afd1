"""Fixtures of the drop-in tests: the SDK's Client of route ``payments`` and a plain
pulsar.Client of the same broker, side by side."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_drop_in.support import ROUTE, quiet


@pytest.fixture
def sdk(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> Iterator[Client]:
    made = Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                  operation_timeout_seconds=10, logger=quiet())  # fmt: skip
    yield made
    made.close()


@pytest.fixture
def raw(sdk: Client) -> Iterator[pulsar.Client]:
    made = pulsar.Client(sdk.spec.url, operation_timeout_seconds=10, logger=quiet())
    yield made
    with contextlib.suppress(pulsar.AlreadyClosed):  # closed twice: pulsar-client raises
        made.close()


@pytest.fixture
def clients(raw: pulsar.Client, sdk: Client) -> dict[str, Any]:
    return {"pulsar-client": raw, "hotstandby": sdk}
