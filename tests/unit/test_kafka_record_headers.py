"""A fetched Kafka record's identity and the headers the application sees (pure logic)."""

from __future__ import annotations

from hotstandby.adapters.kafka.consumer_fetch import _identity_and_rest
from hotstandby.failover.identity import HEADER, RecordId

RID = RecordId(b"\x03" * 16, 2, 70_000)


def test_the_identity_is_taken_out_of_the_headers_wherever_it_is() -> None:
    assert _identity_and_rest([(HEADER, RID.encode())], "t", 0, 0) == (RID, [])
    assert _identity_and_rest([("a", b"1"), (HEADER, RID.encode())], "t", 0, 0) == (RID, [("a", b"1")])
    assert _identity_and_rest([(HEADER, RID.encode()), ("a", None)], "t", 0, 0) == (RID, [("a", None)])
    assert _identity_and_rest({HEADER: RID.encode(), "a": b"1"}, "t", 0, 0) == (RID, [("a", b"1")])


def test_a_record_without_a_valid_identity_keeps_its_other_headers() -> None:
    assert _identity_and_rest([("a", b"1")], "t", 0, 0) == (None, [("a", b"1")])
    assert _identity_and_rest([(HEADER, b"\x09garbage")], "t", 0, 0) == (None, [])
    assert _identity_and_rest([(HEADER, None)], "t", 0, 0) == (None, [])
