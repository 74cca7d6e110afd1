"""A fetched Kafka record's identity and the headers the application sees (pure logic)."""

from __future__ import annotations

from confluent_kafka import Message

from hotstandby.adapters.kafka.consumer.fetch import _identity_and_rest, logical_message
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


def test_a_message_handed_out_keeps_every_field_but_its_topic_and_headers() -> None:
    fetched = Message(topic="kafka-a.orders", partition=3, offset=41, key=b"k", value=b"v",
                      headers=[("a", b"1"), (HEADER, RID.encode())], timestamp=(1, 1_700_000_000_123),
                      leader_epoch=7)  # fmt: skip
    out = logical_message(fetched, "orders", [("a", b"1")], RID)
    assert (out.topic(), out.partition(), out.offset(), out.key(), out.value()) == ("orders", 3, 41, b"k", b"v")
    assert (out.headers(), out.timestamp(), out.leader_epoch()) == ([("a", b"1")], (1, 1_700_000_000_123), 7)
    assert (out.error(), out.latency()) == (None, None)
    assert (out.physical_topic, out.hs_id) == ("kafka-a.orders", RID)
    unknown = logical_message(Message(topic="t", partition=0, offset=0, timestamp=(0, -1)), "t", None, None)
    assert (unknown.leader_epoch(), unknown.headers(), unknown.hs_id) == (None, None, None)
