"""Which group protocol the SDK's Kafka consumer joins with, against a local fake broker that
answers ApiVersions (no brokers)."""

from __future__ import annotations

import struct

import pytest

from hotstandby.adapters.kafka.group_protocol import group_settings, incremental
from hotstandby.configcenter.documents import ClusterSpec
from tests.unit.test_probe_codec import serve_once

KIP_848 = {"group.protocol": "consumer", "group.remote.assignor": "range"}


def broker_serving(*keys: int) -> ClusterSpec:
    def reply(body: bytes) -> bytes:
        corr = struct.unpack(">i", body[4:8])[0]
        payload = struct.pack(">ihi", corr, 0, len(keys)) + b"".join(struct.pack(">hhh", k, 0, 1) for k in keys)
        return struct.pack(">i", len(payload)) + payload

    port, _, _ = serve_once(reply)
    return ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{port}")


def test_a_broker_serving_consumer_group_heartbeats_gets_kip_848_with_the_range_assignor() -> None:
    assert group_settings(broker_serving(0, 1, 18, 68, 69), {"group.id": "g"}) == KIP_848
    assert incremental({"group.id": "g", **KIP_848})


def test_a_broker_without_it_gets_the_classic_protocol() -> None:
    assert group_settings(broker_serving(0, 1, 11, 14, 18), {"group.id": "g"}) == {}


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
