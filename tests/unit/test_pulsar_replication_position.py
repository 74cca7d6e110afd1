"""What a copy on the target proves about replication's progress (pure logic)."""

from __future__ import annotations

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM
from hotstandby.adapters.pulsar.replication_position import _copy_position, _number, offset_of
from hotstandby.failover.outbox import Stored, replicated


class Copy:
    def __init__(self, properties: dict[str, str], publish_ms: int = 5_000) -> None:
        self._properties, self._publish_ms = properties, publish_ms

    def properties(self) -> dict[str, str]:
        return self._properties

    def publish_timestamp(self) -> int:
        return self._publish_ms


def test_positions_order_as_entries_do_across_ledgers() -> None:
    assert offset_of(7, 2**30) < offset_of(8, 0) < offset_of(8, 1)


def test_a_copy_proves_the_entries_before_its_own_only() -> None:
    position = _copy_position(Copy({REPL_SOURCE_POSITION: "8:5", REPLICATED_FROM: "pulsar-a"}), "pulsar-a", False)
    assert position is not None and position.written_ms == 5_000

    def stored(entry: int) -> Stored:
        return Stored("pulsar-a", "t", 0, offset_of(8, entry), acked_ms=1_000)

    assert replicated(stored(4), "pulsar-a", {("t", 0): position}, skew_ms=0)
    assert not replicated(stored(5), "pulsar-a", {("t", 0): position}, skew_ms=0)  # its batch may be half-copied


def test_a_copy_from_another_cluster_or_without_a_position_proves_nothing() -> None:
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "8:5", REPLICATED_FROM: "pulsar-c"}), "pulsar-a", True) is None
    assert _copy_position(Copy({REPLICATED_FROM: "pulsar-a"}), "pulsar-a", True) is None
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "x"}), "pulsar-a", True) is None
    # Apache Pulsar's copies do not name their source: with two clusters it is the other one.
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "8:5"}), "pulsar-a", False) is None
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "8:5"}), "pulsar-a", True) is not None


def test_partition_numbers_come_from_the_partition_topic_names() -> None:
    assert _number("persistent://public/default/t-partition-12") == 12
    assert _number("persistent://public/default/t") == 0
