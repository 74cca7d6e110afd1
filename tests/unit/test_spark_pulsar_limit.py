"""maxEntriesPerTrigger on a Pulsar route: where a capped batch ends (pure logic)."""

from __future__ import annotations

import pulsar
import pytest

pytest.importorskip("pyspark")

from hotstandby.spark_integration.pulsar.cluster import id_key, id_text
from hotstandby.spark_integration.pulsar.limit import capped_ends


def at(ledger: int, entry: int, batch: int = -1) -> str:
    return id_text(pulsar.MessageId(-1, ledger, entry, batch))


def nowhere(topic: str, start: str) -> tuple[int, int] | None:
    raise AssertionError(f"no read needed for {topic}")


def test_waiting_entries_are_shared_by_what_each_partition_has_waiting() -> None:
    starts = {"a": at(5, 10), "b": at(6, 0)}
    ends = {"a": at(5, 110), "b": at(6, 300)}
    capped = capped_ends(starts, ends, 40, nowhere)
    assert {t: id_key(v) for t, v in capped.items()} == {"a": (5, 20), "b": (6, 30)}


def test_a_batch_within_the_cap_ends_at_the_last_ids_themselves() -> None:
    starts = {"a": at(5, 10)}
    ends = {"a": at(5, 30, batch=3)}
    assert capped_ends(starts, ends, 40, nowhere) == ends


def test_every_partition_with_something_waiting_reads_at_least_an_entry() -> None:
    starts = {t: at(1, 0) for t in "abc"}
    ends = {t: at(1, 100) for t in "abc"}
    capped = capped_ends(starts, ends, 1, nowhere)
    assert {id_key(v) for v in capped.values()} == {(1, 1)}


def test_waiting_entries_in_a_later_ledger_end_the_batch_within_the_ledger_read_next() -> None:
    asked: list[tuple[str, str]] = []

    def first_after(topic: str, start: str) -> tuple[int, int] | None:
        asked.append((topic, start))
        return (7, 0)

    starts, ends = {"a": at(5, 10)}, {"a": at(9, 50)}
    capped = capped_ends(starts, ends, 40, first_after)
    assert id_key(capped["a"]) == (7, 39)  # at most 40 entries into ledger 7, from its first
    assert asked == [("a", starts["a"])]


def test_a_partition_read_from_its_first_message_learns_where_that_is() -> None:
    ends = {"a": at(3, 5)}
    assert capped_ends({}, ends, 40, lambda topic, start: (3, 0)) == ends
    assert id_key(capped_ends({}, {"a": at(3, 500)}, 40, lambda topic, start: (3, 0))["a"]) == (3, 39)


def test_a_partition_whose_next_message_cannot_be_read_waits_for_the_next_batch() -> None:
    starts, ends = {"a": at(5, 10), "b": at(6, 0)}, {"a": at(8, 1), "b": at(6, 5)}
    capped = capped_ends(starts, ends, 40, lambda topic, start: None)
    assert capped == {"a": starts["a"], "b": ends["b"]}


def test_a_partition_with_nothing_waiting_keeps_its_position() -> None:
    starts, ends = {"a": at(5, 10), "b": ""}, {"a": at(5, 10), "b": ""}
    assert capped_ends(starts, ends, 40, nowhere) == ends
