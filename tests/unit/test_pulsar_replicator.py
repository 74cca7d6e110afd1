from __future__ import annotations

import base64
import json

import pulsar
import pytest

from hotstandby.errors import ValidationError
from hotstandby.refcluster.replicators.pulsar.config import PulsarFlowConfig
from hotstandby.refcluster.replicators.pulsar.flow import PARTITION, _route_by_property, base_topic, parse_progress


def test_partition_topics_map_to_their_partitioned_topic() -> None:
    assert base_topic("persistent://public/default/pay-partition-3") == "persistent://public/default/pay"
    assert base_topic("persistent://public/default/pay") == "persistent://public/default/pay"
    assert base_topic("persistent://t/n/a-partition-x") == "persistent://t/n/a-partition-x"


class FakeMessage:
    def __init__(self, props: dict[str, str]) -> None:
        self._props = props

    def properties(self) -> dict[str, str]:
        return self._props


@pytest.mark.parametrize(("source", "partitions", "expected"), [("2", 4, 2), ("0", 4, 0), ("5", 4, 1)])
def test_copies_are_routed_to_the_source_partition(source: str, partitions: int, expected: int) -> None:
    assert _route_by_property(FakeMessage({PARTITION: source}), partitions) == expected  # type: ignore[arg-type]


def test_namespace_scope() -> None:
    config = PulsarFlowConfig(source_alias="a", source_url="pulsar://h:1", target_alias="b", target_url="pulsar://h:2")
    assert config.in_scope("persistent://public/default/x")
    assert not config.in_scope("persistent://other/ns/x")


@pytest.mark.parametrize(
    "raw",
    [b"", b"[[[[", b"\xff\xfe", b'{"message_id": 7}', b'{"message_id": "not base64!"}',
     b'{"message_id": "Z2FyYmFnZQ=="}', b'{"position": "1:2"}', b"[" * 5000 + b"]" * 5000],
)  # fmt: skip
def test_a_damaged_progress_value_is_a_validation_error(raw: bytes) -> None:
    with pytest.raises(ValidationError):
        parse_progress("/ns/replication/f/t", raw)


def test_a_stored_progress_value_reads_back() -> None:
    mid = pulsar.MessageId(0, 5, 3, -1)
    doc = {"message_id": base64.b64encode(mid.serialize()).decode(), "position": str(mid)}
    assert parse_progress("/k", json.dumps(doc).encode()) == mid.serialize()
