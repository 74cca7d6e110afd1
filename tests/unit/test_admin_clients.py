"""The process's shared Kafka admin clients: one per cluster address and client settings."""

from __future__ import annotations

from typing import Any

import pytest

from hotstandby.adapters.kafka import admin_clients
from hotstandby.adapters.kafka.client_logs import LIBRDKAFKA_LOGGER
from hotstandby.configcenter.documents import ClusterSpec


class FakeAdmin:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def poll(self, timeout: float) -> int:
        return 0


def test_an_admin_client_connects_with_the_clusters_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_clients, "AdminClient", FakeAdmin)
    monkeypatch.setattr(admin_clients, "_clients", {})
    tls = ClusterSpec(name="k", kind="kafka", url="127.0.0.1:9093",
                      client={"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem"})  # fmt: skip
    admin = admin_clients.shared_admin(tls)
    assert admin.config == {"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem",
                            "bootstrap.servers": "127.0.0.1:9093", "logger": LIBRDKAFKA_LOGGER}  # fmt: skip
    assert admin_clients.shared_admin(tls) is admin, "shared, never made twice"
    plain = ClusterSpec(name="k", kind="kafka", url="127.0.0.1:9093")
    assert admin_clients.shared_admin(plain) is not admin, "other settings, another client"
