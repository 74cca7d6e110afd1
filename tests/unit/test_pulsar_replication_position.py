"""What a copy on the target proves about replication's progress (pure logic)."""

from __future__ import annotations

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM
from hotstandby.adapters.pulsar.replication_position import _copy_position, _number, offset_of, own_copies
from hotstandby.failover.identity import HEADER, IdentityText, new_session
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
    position = _copy_position(Copy({REPL_SOURCE_POSITION: "8:5", REPLICATED_FROM: "pulsar-a"}), "pulsar-a", False, None)
    assert position is not None and position.written_ms == 5_000

    def stored(entry: int) -> Stored:
        return Stored("pulsar-a", "t", 0, offset_of(8, entry), acked_ms=1_000)

    assert replicated(stored(4), "pulsar-a", {("t", 0): position}, skew_ms=0)
    assert not replicated(stored(5), "pulsar-a", {("t", 0): position}, skew_ms=0)  # its batch may be half-copied


def test_a_copy_from_another_cluster_or_without_a_position_proves_nothing() -> None:
    assert (
        _copy_position(Copy({REPL_SOURCE_POSITION: "8:5", REPLICATED_FROM: "pulsar-c"}), "pulsar-a", True, None) is None
    )
    assert _copy_position(Copy({REPLICATED_FROM: "pulsar-a"}), "pulsar-a", True, None) is None
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "x"}), "pulsar-a", True, None) is None
    # Apache Pulsar's copies do not name their source: with two clusters it is the other one.
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "8:5"}), "pulsar-a", False, None) is None
    assert _copy_position(Copy({REPL_SOURCE_POSITION: "8:5"}), "pulsar-a", True, None) is not None


def test_partition_numbers_come_from_the_partition_topic_names() -> None:
    assert _number("persistent://public/default/t-partition-12") == 12
    assert _number("persistent://public/default/t") == 0


def test_a_batched_copy_is_known_by_the_identity_of_a_message_sent_to_the_source_only() -> None:
    """A batched copy shows no source position; a message the producer sent to the source
    only, found on the target, is a copy of the source's entry, and proves the entries before."""
    session, other = new_session(), new_session()
    sent_once = {(0, 7): Stored("pulsar-a", "t", 0, offset_of(8, 5), acked_ms=1_000)}
    asked: list[int] = []

    def window() -> dict[tuple[int, int], Stored]:
        asked.append(1)
        return sent_once

    ours = own_copies(session, window)

    def copy(of: bytes, sequence: int) -> Copy:
        return Copy({HEADER: IdentityText(of).text(0, sequence), "app": "x"}, publish_ms=9_000)

    position = _copy_position(copy(session, 7), "pulsar-a", True, ours)
    assert position is not None and position.offset == offset_of(8, 5) - 1 and position.written_ms == 9_000
    # Not one of the producer's own sent to the source only (re-sent, or out of the window), or
    # another producer's: no proof.
    assert _copy_position(copy(session, 8), "pulsar-a", True, ours) is None
    assert _copy_position(copy(other, 7), "pulsar-a", True, ours) is None
    assert _copy_position(copy(session, 7), "pulsar-a", True, None) is None
    assert asked == [1]  # the window is read once per switch, not per message
