"""Each cluster of a route gets its own credentials from its definition: a relay in front of
each reference broker reads the CONNECT commands the Pulsar client sends before and after a
switch. (pulsar-lite checks no credentials: what reaches the wire is what this shows.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Scalar
from hotstandby.configcenter.polling import wait_until
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_relay import Relay

ROUTE = "credentials"
A, B = "relayed-pulsar-a", "relayed-pulsar-b"


@pytest.fixture
def relays(refcluster: RefCluster) -> Iterator[dict[str, Relay]]:
    """A relay in front of each reference broker, keyed by the cluster defined on it."""
    made = {A: Relay(refcluster.cluster_spec("pulsar-a").endpoints()[0]),
            B: Relay(refcluster.cluster_spec("pulsar-b").endpoints()[0])}  # fmt: skip
    try:
        yield made
    finally:
        for relay in made.values():
            relay.close()


def credentials_seen(relay: Relay) -> set[tuple[str, bytes]]:
    """``(method, data)`` of every CONNECT with credentials (the reachability probe brings none)."""
    return {(c.auth_method, c.auth_data) for c in relay.connects() if c.auth_method}


@pytest.fixture
def produce_across_a_switch(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, relays: dict[str, Relay]
) -> Callable[..., None]:
    """``run(clients, **keywords)``: define the relayed clusters with ``clients`` settings and a
    route over them; with a Client made with ``keywords``, send on A, switch to B, send on B."""

    def run(clients: Mapping[str, Mapping[str, Scalar]], **keywords: Any) -> None:
        for name, relay in relays.items():
            center.put_cluster(ClusterSpec(name=name, kind="pulsar", url=relay.url, client=clients.get(name, {})))
        center.create_route(ROUTE, [A, B], A)
        topic = f"persistent://public/default/credentials-{uuid.uuid4().hex[:8]}"
        with Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                    operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
                    **keywords) as client:  # fmt: skip
            producer = client.create_producer(topic)
            producer.send(b"on a")
            assert credentials_seen(relays[B]) == set(), "nothing but the probe reached pulsar-b yet"
            center.switch(ROUTE, B, reason="test")
            assert wait_until(lambda: client.cluster == B, 30), "the client did not move"
            producer.send(b"on b")

    return run


def test_each_cluster_is_reached_with_its_own_token(
    produce_across_a_switch: Callable[..., None], relays: dict[str, Relay], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = f"token-a-{uuid.uuid4().hex}", f"token-b-{uuid.uuid4().hex}"
    monkeypatch.setenv("TOKEN_A", a)
    monkeypatch.setenv("TOKEN_B", b)
    produce_across_a_switch({
        A: {"auth_plugin": "token", "auth_params": "${env:TOKEN_A}"},
        B: {"auth_plugin": "token", "auth_params": "${env:TOKEN_B}"},
    })  # fmt: skip
    assert credentials_seen(relays[A]) == {("token", a.encode())}, "pulsar-a is reached with its own token only"
    assert credentials_seen(relays[B]) == {("token", b.encode())}, "pulsar-b is reached with its own token only"


def test_the_applications_authentication_serves_a_cluster_whose_definition_has_none(
    produce_across_a_switch: Callable[..., None], relays: dict[str, Relay], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, b = f"app-token-{uuid.uuid4().hex}", f"token-b-{uuid.uuid4().hex}"
    monkeypatch.setenv("TOKEN_B", b)
    produce_across_a_switch({B: {"auth_plugin": "token", "auth_params": "${env:TOKEN_B}"}},
                            authentication=pulsar.AuthenticationToken(mine))  # fmt: skip
    assert credentials_seen(relays[A]) == {("token", mine.encode())}
    assert credentials_seen(relays[B]) == {("token", b.encode())}, "the definition's token wins on pulsar-b"
