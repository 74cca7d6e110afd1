from __future__ import annotations

import pytest

from hotstandby.adapters.pulsar.replicator.config import PulsarFlowConfig
from hotstandby.adapters.pulsar.replicator.flow import PARTITION, _route_by_property, base_topic


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
