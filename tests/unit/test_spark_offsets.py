"""The streaming offset Spark keeps in its checkpoint: a fixed JSON form, read back strictly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.errors import ValidationError
from hotstandby.spark_integration.source.offsets import Detour, SourceOffset

topics = st.sampled_from(["orders", "kafka-a.orders", "payments", "a/b", "ü"])
partition_maps = st.dictionaries(st.integers(0, 2000), st.integers(0, 2**62), min_size=1, max_size=6)
positions = st.dictionaries(topics, partition_maps, max_size=4)


@given(
    positions,
    positions,
    st.integers(-5, 10**6),
    st.booleans(),
    st.one_of(st.none(), st.just({"from": "kafka-a", "epoch": 1, "strategies": {"mm2-checkpoint": 2}})),
)
def test_round_trip(
    pos: dict[str, dict[int, int]], starts: dict[str, dict[int, int]], epoch: int, copy: bool, switch: Any
) -> None:
    logical = {"kafka-a.orders": "orders"} if copy and "kafka-a.orders" in pos else {}
    offset = SourceOffset("orders", epoch, "kafka-b", pos, logical, starts, switch)
    doc = offset.to_dict()
    back = SourceOffset.from_dict(json.loads(json.dumps(doc)))
    assert back == offset
    assert back.to_dict() == doc and json.dumps(back.to_dict()) == json.dumps(doc)


def test_to_dict_writes_the_documented_form() -> None:
    offset = SourceOffset(
        "orders",
        2,
        "kafka-b",
        {"orders": {0: 12}, "kafka-a.orders": {0: 40}},
        {"kafka-a.orders": "orders"},
        {"orders": {0: 0}},
        {"from": "kafka-a", "epoch": 1, "strategies": {"mm2-checkpoint": 1, "beginning": 1}},
    )
    assert json.dumps(offset.to_dict()) == (
        '{"route": "orders", "epoch": 2, "cluster": "kafka-b", '
        '"positions": {"kafka-a.orders": {"0": 40}, "orders": {"0": 12}}, '
        '"logical": {"kafka-a.orders": "orders"}, '
        '"starts": {"orders": {"0": 0}}, '
        '"switch": {"from": "kafka-a", "epoch": 1, "strategies": {"mm2-checkpoint": 1, "beginning": 1}}}'
    )


def test_optional_keys_appear_only_when_present() -> None:
    bare = SourceOffset("r", 0, "c", {"t": {0: 1}})
    assert list(bare.to_dict()) == ["route", "epoch", "cluster", "positions"]
    with_starts = SourceOffset("r", 0, "c", {"t": {0: 1}}, starts={"t": {0: 0}})
    assert list(with_starts.to_dict()) == ["route", "epoch", "cluster", "positions", "starts"]
    # a logical name equal to the topic, or for a topic without positions, is not written
    odd = SourceOffset("r", 0, "c", {"t": {0: 1}}, logical={"t": "t", "gone": "t"}, starts={"t": {}}, switch={})
    assert list(odd.to_dict()) == ["route", "epoch", "cluster", "positions"]


def test_equal_offsets_built_in_different_orders_dump_the_same() -> None:
    a = SourceOffset(
        "r",
        3,
        "c",
        {"b": {2: 5, 10: 7, 1: 9}, "a": {0: 1}},
        {"b": "x", "a": "y"},
        {"b": {10: 0, 2: 0}, "a": {0: 0}},
    )
    b = SourceOffset(
        "r",
        3,
        "c",
        {"a": {0: 1}, "b": {1: 9, 10: 7, 2: 5}},
        {"a": "y", "b": "x"},
        {"a": {0: 0}, "b": {2: 0, 10: 0}},
    )
    assert a == b
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
    assert list(a.to_dict()["positions"]) == ["a", "b"]
    assert list(a.to_dict()["logical"]) == ["a", "b"]


def test_partitions_are_sorted_numerically_as_string_keys() -> None:
    doc = SourceOffset("r", 0, "c", {"t": {10: 1, 2: 2, 1: 3, 100: 4}}).to_dict()
    assert list(doc["positions"]["t"].items()) == [("1", 3), ("2", 2), ("10", 1), ("100", 4)]


@given(positions)
def test_topics_with_no_partitions_are_dropped_and_dumps_stay_stable(pos: dict[str, dict[int, int]]) -> None:
    offset = SourceOffset("r", 1, "c", {**pos, "empty": {}})
    doc = offset.to_dict()
    assert "empty" not in doc["positions"]
    assert json.dumps(SourceOffset.from_dict(doc).to_dict()) == json.dumps(doc)


GOOD: dict[str, Any] = {"route": "r", "epoch": 1, "cluster": "c", "positions": {"t": {"0": 5}}}


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        "{}",
        7,
        {k: v for k, v in GOOD.items() if k != "route"},
        {k: v for k, v in GOOD.items() if k != "cluster"},
        {k: v for k, v in GOOD.items() if k != "epoch"},
        {**GOOD, "route": 5},
        {**GOOD, "cluster": None},
        {**GOOD, "epoch": "1"},
        {**GOOD, "epoch": True},
        {**GOOD, "epoch": 1.0},
        {**GOOD, "positions": []},
        {**GOOD, "positions": "t:0:5"},
        {**GOOD, "positions": {"t": [5]}},
        {**GOOD, "positions": {"t": {"0": "five"}}},
        {**GOOD, "positions": {"t": {"zero": 5}}},
        {**GOOD, "positions": {"t": {"0": None}}},
        {**GOOD, "starts": {"t": {"0": "x"}}},
        {**GOOD, "starts": 3},
        {**GOOD, "logical": {"t": 1}},
        {**GOOD, "logical": ["t"]},
        {**GOOD, "switch": "kafka-a"},
        {**GOOD, "topic_ids": ["t"]},
        {**GOOD, "topic_ids": {"t": 5}},
    ],
)
def test_malformed_documents_are_refused(doc: Any) -> None:
    with pytest.raises(ValidationError) as err:
        SourceOffset.from_dict(doc)
    assert err.value.key.startswith("streaming offset")


def test_a_fractional_offset_is_refused() -> None:
    with pytest.raises(ValidationError):
        SourceOffset.from_dict({**GOOD, "positions": {"t": {"0": 5.7}}})


def test_a_minimal_document_reads_with_empty_defaults() -> None:
    got = SourceOffset.from_dict({"route": "r", "epoch": 0, "cluster": "c"})
    assert got == SourceOffset("r", 0, "c", {}, {}, {}, None)
    assert SourceOffset.from_dict(GOOD).positions == {"t": {0: 5}}


def test_logical_of_names_copies_and_passes_others_through() -> None:
    offset = SourceOffset("r", 0, "c", {"kafka-a.orders": {0: 1}}, {"kafka-a.orders": "orders"})
    assert offset.logical_of("kafka-a.orders") == "orders"
    assert offset.logical_of("orders") == "orders"
    assert offset.logical_of("payments") == "payments"


def test_pulsar_message_ids_round_trip_and_must_be_hex() -> None:
    offset = SourceOffset("payments", 3, "pulsar-b", {}, ids={"t-partition-1": "08011002", "t-partition-0": ""},
                          starts_ids={"t-partition-0": ""})  # fmt: skip
    doc = offset.to_dict()
    assert list(doc) == ["route", "epoch", "cluster", "positions", "ids", "starts_ids"]
    assert list(doc["ids"]) == ["t-partition-0", "t-partition-1"]
    assert SourceOffset.from_dict(json.loads(json.dumps(doc))) == offset
    with pytest.raises(ValidationError):
        SourceOffset.from_dict({**doc, "ids": {"t": "not hex"}})


def test_topic_ids_come_back_from_the_checkpoint_and_are_written_only_when_known() -> None:
    offset = SourceOffset("r", 2, "kafka-a", {"t": {0: 5}}, topic_ids={"t": "AaIcqjIbd4Cje6BBr75kUw"})
    doc = json.loads(json.dumps(offset.to_dict()))
    assert doc["topic_ids"] == {"t": "AaIcqjIbd4Cje6BBr75kUw"}
    assert SourceOffset.from_dict(doc) == offset
    assert "topic_ids" not in SourceOffset("r", 2, "kafka-a", {"t": {0: 5}}).to_dict(), "a checkpoint of before"


def test_a_detour_round_trips_and_a_malformed_one_is_refused() -> None:
    way = Detour("kafka-b", (("kafka-a.orders", "orders", 0, 0, 40), ("orders", "orders", 0, 3, 9)))
    offset = SourceOffset("orders", 3, "kafka-a", {"orders": {0: 0}}, starts={"orders": {0: 0}}, detour=way)
    doc = json.loads(json.dumps(offset.to_dict()))
    assert doc["detour"] == {"cluster": "kafka-b", "ranges": [["kafka-a.orders", "orders", 0, 0, 40],
                                                              ["orders", "orders", 0, 3, 9]]}  # fmt: skip
    assert SourceOffset.from_dict(doc) == offset
    for bad in ({"cluster": "kafka-b"}, {"cluster": "kafka-b", "ranges": [["t", 0, 1]]}, "kafka-b"):
        with pytest.raises(ValidationError):
            SourceOffset.from_dict({**doc, "detour": bad})
