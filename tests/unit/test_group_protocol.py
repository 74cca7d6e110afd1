"""Which group protocol the SDK's Kafka consumer joins with, against a local fake broker that
answers ApiVersions (no brokers)."""

from __future__ import annotations

import struct

import pytest

from hotstandby.adapters.kafka.consumer.group_protocol import group_settings, incremental
from hotstandby.configcenter.documents import ClusterSpec
from tests.unit.test_probe_codec import serve_once

KIP_848 = {"group.protocol": "consumer", "group.remote.assignor": "range"}


def _uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def broker_with(features: dict[str, int]) -> ClusterSpec:
    """A broker answering ApiVersions v3 with two APIs and ``features`` finalized."""

    def reply(body: bytes) -> bytes:
        api_key, version, corr = struct.unpack(">hhi", body[:8])
        assert (api_key, version) == (18, 3)
        apis = _uvarint(3) + b"".join(struct.pack(">hhh", k, 0, 3) + b"\x00" for k in (18, 68))
        finalized = _uvarint(len(features) + 1) + b"".join(
            _uvarint(len(name) + 1) + name.encode() + struct.pack(">hh", level, level) + b"\x00"
            for name, level in features.items()
        )
        tags = _uvarint(1) + _uvarint(2) + _uvarint(len(finalized)) + finalized
        payload = struct.pack(">ih", corr, 0) + apis + struct.pack(">i", 0) + tags
        return struct.pack(">i", len(payload)) + payload

    port, _, _ = serve_once(reply)
    return ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{port}")


def test_a_cluster_with_group_version_1_gets_kip_848_with_the_range_assignor() -> None:
    features = {"group.version": 1, "kraft.version": 1, "metadata.version": 30}
    assert group_settings(broker_with(features), {"group.id": "g"}) == KIP_848
    assert incremental({"group.id": "g", **KIP_848})


def test_a_cluster_without_it_gets_the_classic_protocol_though_it_lists_the_api() -> None:
    """Kafka 3.9 lists ConsumerGroupHeartbeat (68) but finalizes no group.version."""
    assert group_settings(broker_with({"kraft.version": 1, "metadata.version": 21}), {"group.id": "g"}) == {}


@pytest.mark.parametrize(
    "chosen",
    [
        {"group.protocol": "classic"},
        {"partition.assignment.strategy": "range"},
        {"session.timeout.ms": 10000},
        {"heartbeat.interval.ms": 3000},
    ],
)
def test_an_application_that_chose_a_protocol_or_a_classic_setting_keeps_it(chosen: dict[str, object]) -> None:
    spec = ClusterSpec(name="kafka-a", kind="kafka", url="127.0.0.1:1")  # never asked
    assert group_settings(spec, {"group.id": "g", **chosen}) == {}


def test_no_answer_means_the_classic_protocol() -> None:
    spec = ClusterSpec(name="kafka-a", kind="kafka", url="127.0.0.1:1")  # nothing listens there
    assert group_settings(spec, {"group.id": "g"}) == {}
    assert not incremental({"group.id": "g"})
    assert incremental({"partition.assignment.strategy": "cooperative-sticky"})
