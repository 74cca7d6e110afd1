"""What a copy on the target proves about replication's progress (pure logic)."""

from __future__ import annotations

import pulsar

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM
from hotstandby.adapters.pulsar.producer.replication_position import _copy_position, _number, offset_of, own_copies
from hotstandby.failover.identity import HEADER, IdentityText, new_session
from hotstandby.failover.outbox import Stored, replicated


class Copy:
    """A copied message as pulsar-client shows it; ``batch_index`` -1: the entry is this message."""

    def __init__(self, properties: dict[str, str], publish_ms: int = 5_000, batch_index: int = 0) -> None:
        self._properties, self._publish_ms, self._batch_index = properties, publish_ms, batch_index

    def properties(self) -> dict[str, str]:
        return self._properties

    def publish_timestamp(self) -> int:
        return self._publish_ms

    def message_id(self) -> pulsar.MessageId:
        return pulsar.MessageId(-1, 3, 9, self._batch_index)


def test_positions_order_as_entries_do_across_ledgers() -> None:
    assert offset_of(7, 2**30) < offset_of(8, 0) < offset_of(8, 1)


def test_a_copy_proves_the_entries_before_its_own_only() -> None:
    position = _copy_position(Copy({REPL_SOURCE_POSITION: "8:5", REPLICATED_FROM: "pulsar-a"}), "pulsar-a", False, None)
    assert position is not None and position.written_ms == 5_000

    def stored(entry: int) -> Stored:
        return Stored("pulsar-a", "t", 0, offset_of(8, entry), acked_ms=1_000)

    assert replicated(stored(4), "pulsar-a", {("t", 0): position}, skew_ms=0)
    assert not replicated(stored(5), "pulsar-a", {("t", 0): position}, skew_ms=0)  # its batch may be half-copied


def test_a_copy_of_a_whole_entry_proves_its_own_entry_too() -> None:
    copy = Copy({REPL_SOURCE_POSITION: "8:5"}, batch_index=-1)
    position = _copy_position(copy, "pulsar-a", True, None)
    assert position is not None and position.offset == offset_of(8, 5)
    stored = Stored("pulsar-a", "t", 0, offset_of(8, 5), acked_ms=1_000)
    assert replicated(stored, "pulsar-a", {("t", 0): position}, skew_ms=0)
    assert not replicated(stored._replace(offset=offset_of(8, 6)), "pulsar-a", {("t", 0): position}, skew_ms=0)


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


def test_a_copy_of_our_own_proves_what_the_source_acknowledged_before_it_without_a_skew_margin() -> None:
    """The producer's messages are acknowledged in the source's order: those acknowledged by
    the time its copied message was are copied, however recent (the copy's publish time and
    the skew margin do not matter); those acknowledged later are not, whatever their offset
    (a source that came back empty counts offsets anew)."""
    session = new_session()
    mine = Stored("pulsar-a", "t", 0, offset_of(8, 5), acked_ms=10_000)
    ours = own_copies(session, lambda: {(0, 7): mine})
    copy = Copy({HEADER: IdentityText(session).text(0, 7), REPL_SOURCE_POSITION: "8:5"}, publish_ms=10_001,
                batch_index=-1)  # fmt: skip
    position = _copy_position(copy, "pulsar-a", True, ours)
    assert position is not None and position.own_acked_ms == 10_000 and position.offset == offset_of(8, 5)
    positions = {("t", 0): position}
    assert replicated(mine, "pulsar-a", positions, skew_ms=5_000)
    assert replicated(mine._replace(offset=offset_of(8, 4), acked_ms=9_990), "pulsar-a", positions, skew_ms=5_000)
    assert not replicated(mine._replace(offset=offset_of(8, 1), acked_ms=10_020), "pulsar-a", positions, skew_ms=0)
    assert not replicated(mine._replace(offset=offset_of(8, 6), acked_ms=9_000), "pulsar-a", positions, skew_ms=0)
