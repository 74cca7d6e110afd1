"""A consumer group's state over the Kafka protocol (ApiVersions, FindCoordinator,
DescribeGroups), against a loopback server that answers as a broker does."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from hotstandby.adapters.kafka.wire.group_state import UNSUPPORTED, group_state
from hotstandby.configcenter.documents import ClusterSpec


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


@dataclass
class Broker:
    """Answers FindCoordinator and DescribeGroups."""

    state: str = "Stable"
    describe_error: int = 0
    find_error: int = 0
    seen: list[tuple[int, int]] = field(default_factory=list)  # (api, version) asked

    def __post_init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
                request = conn.recv(size, socket.MSG_WAITALL)
                api, version, correlation = struct.unpack_from(">hhi", request)
                self.seen.append((api, version))
                body = struct.pack(">i", correlation) + self._answer(api, version)
                conn.sendall(struct.pack(">i", len(body)) + body)

    def _answer(self, api: int, version: int) -> bytes:
        throttle = struct.pack(">i", 0) if version >= 1 else b""
        if api == 10:
            message = struct.pack(">h", -1) if version >= 1 else b""
            return throttle + struct.pack(">h", self.find_error) + message + struct.pack(">i", 1) + \
                _string("127.0.0.1") + struct.pack(">i", self.port)  # fmt: skip
        assert api == 15
        return throttle + struct.pack(">ih", 1, self.describe_error) + _string("g") + _string(self.state) + \
            _string("consumer") + _string("range") + struct.pack(">i", 0)  # fmt: skip

    def spec(self, **client: str) -> ClusterSpec:
        return ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{self.port}", client=client)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def broker() -> Iterator[Broker]:
    made = Broker()
    yield made
    made.close()


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "Empty"])
def test_the_groups_state(broker: Broker, state: str) -> None:
    broker.state = state
    assert group_state(broker.spec(), "g") == state
    assert broker.seen == [(10, 2), (15, 4)], "versions without tagged fields"


@pytest.mark.parametrize(("error", "expected"), [(16, "Unknown"), (14, "Unknown"), (69, UNSUPPORTED)])
def test_errors_of_the_coordinator(broker: Broker, error: int, expected: str) -> None:
    """Not the coordinator, or loading: not known yet. No such group (or a KIP-848 group): not
    one to ask about."""
    broker.describe_error = error
    assert group_state(broker.spec(), "g") == expected


def test_no_coordinator_yet(broker: Broker) -> None:
    broker.find_error = 15
    assert group_state(broker.spec(), "g") == "Unknown"


def test_a_sasl_cluster_is_not_asked(broker: Broker) -> None:
    assert group_state(broker.spec(**{"security.protocol": "SASL_PLAINTEXT"}), "g") == UNSUPPORTED
    assert broker.seen == []


def test_no_broker_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert group_state(ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{port}"), "g", timeout=0.5) is None
