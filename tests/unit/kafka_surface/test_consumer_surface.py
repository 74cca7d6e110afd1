"""The Kafka consumer fails and answers as confluent-kafka's does: each case runs on the raw
client and on the facade and compares the exception type and message (or the result). No
broker (the cluster's port is closed) and no etcd (an in-memory config center)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.identity import HEADER, RecordId
from tests.unit.kafka_surface.support import CONSUMER_CALLS, PRODUCER_CALLS, RAW, ROUTE, TP, outcome, same

# -- the consumer ----


def test_consumer_close_and_truth(consumers: tuple[Any, Consumer]) -> None:
    raw, facade = consumers
    assert bool(facade) is bool(raw) is True
    same(raw.close, facade.close)
    same(raw.close, facade.close)  # twice


def test_consumer_calls_after_close(consumers: tuple[Any, Consumer]) -> None:
    raw, facade = consumers
    raw.close()
    facade.close()
    outcomes = {
        name: (outcome(partial(call, facade)), outcome(partial(call, raw))) for name, call in CONSUMER_CALLS.items()
    }
    assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
    assert {kind for (kind, _), _ in outcomes.values()} == {"RuntimeError"}


ARGUMENT_CASES: dict[str, Callable[[Any], Any]] = {
    "poll a string": lambda c: c.poll("a"),
    "consume a string timeout": lambda c: c.consume(1, "a"),
    "consume a string count": lambda c: c.consume("a", 0),
    "consume -1": lambda c: c.consume(-1, 0),
    "consume over a million": lambda c: c.consume(1_000_001, 0),
    "consume none": lambda c: c.consume(0, 0),
    "poll(0)": lambda c: c.poll(0),
    "commit a message and offsets": lambda c: c.commit(message=TOMBSTONE, offsets=[TopicPartition("t", 0, 1)]),
    "commit a partition, not a list": lambda c: c.commit(offsets=TopicPartition("t", 0, 1)),
    "commit a list of numbers": lambda c: c.commit(offsets=[1]),
    "commit a number as the message": lambda c: c.commit(message=1),
    "store nothing": lambda c: c.store_offsets(),
    "store nothing, positionally": lambda c: c.store_offsets(None),
    "store a message and offsets": lambda c: c.store_offsets(message=TOMBSTONE, offsets=[TopicPartition("t", 0, 1)]),
    "store a partition, not a list": lambda c: c.store_offsets(offsets=TopicPartition("t", 0, 1)),
    "store a number as the message": lambda c: c.store_offsets(message=1),
    "store with enable.auto.offset.store": lambda c: c.store_offsets(offsets=[TopicPartition("t", 0, 1)]),
}
TOMBSTONE = Message(topic="t", partition=0, offset=1)


@pytest.mark.parametrize("call", ARGUMENT_CASES.values(), ids=ARGUMENT_CASES.keys())
def test_consumer_arguments_are_checked_as_confluent_kafkas(
    call: Callable[[Any], Any], consumers: tuple[Any, Consumer]
) -> None:
    raw, facade = consumers
    same(partial(call, raw), partial(call, facade))


def test_arguments_are_checked_before_closed(consumers: tuple[Any, Consumer], producers: tuple[Any, Producer]) -> None:
    (raw, facade), (raw_p, facade_p) = consumers, producers
    for client in (raw, facade):
        client.close()
    for client in (raw_p, facade_p):
        client.close(0)
    assert same(lambda: raw.poll("a"), lambda: facade.poll("a"))[0] == "TypeError"
    assert same(lambda: raw.consume(-1, 0), lambda: facade.consume(-1, 0))[0] == "RuntimeError"
    assert same(lambda: raw_p.flush("a"), lambda: facade_p.flush("a"))[0] == "TypeError"


def test_store_offsets_without_auto_store(center: ConfigCenter) -> None:
    """Offsets of partitions not assigned: ``_UNKNOWN_PARTITION``; one assigned among them: stored."""
    group = {"group.id": "g", "enable.auto.commit": False, "enable.auto.offset.store": False}
    raw, facade = confluent_kafka.Consumer({**RAW, **group}), Consumer({**ROUTE, **group}, center=center)
    try:
        unassigned = [TopicPartition("t", 0, 1)]
        assert same(lambda: raw.store_offsets(offsets=unassigned),
                    lambda: facade.store_offsets(offsets=unassigned))[0] == "KafkaException"  # fmt: skip
        for client in (raw, facade):
            client.assign([TopicPartition("t", 0)])
        some = [TopicPartition("t", 0, 1), TopicPartition("u", 0, 1)]
        assert same(lambda: raw.store_offsets(offsets=some), lambda: facade.store_offsets(offsets=some)) == (
            "ok",
            "None",
        )
    finally:
        raw.close()
        facade.close()


class _SkipsInit(Consumer):
    def __init__(self, conf: dict[str, Any]) -> None:
        """Does not call the facade's."""


class _RawSkipsInit(confluent_kafka.Consumer):
    def __init__(self, conf: dict[str, Any]) -> None:
        """Does not call the client's."""


class _ProducerSkipsInit(Producer):
    def __init__(self, conf: dict[str, Any]) -> None:
        """Does not call the facade's."""


class _RawProducerSkipsInit(confluent_kafka.Producer):
    def __init__(self, conf: dict[str, Any]) -> None:
        """Does not call the client's."""


def test_a_subclass_that_skips_init_is_a_closed_client() -> None:
    """As confluent-kafka's: ``RuntimeError`` for its calls (``close`` and ``len`` answer)."""
    consumer, raw = _SkipsInit({}), _RawSkipsInit({})
    outcomes = {name: (outcome(partial(call, consumer)), outcome(partial(call, raw)))
                for name, call in {**CONSUMER_CALLS, "close": lambda c: c.close()}.items()}  # fmt: skip
    assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
    producer, raw_p = _ProducerSkipsInit({}), _RawProducerSkipsInit({})
    calls = {**PRODUCER_CALLS, "len": len, "close": lambda p: p.close(0)}
    outcomes = {name: (outcome(partial(call, producer)), outcome(partial(call, raw_p))) for name, call in calls.items()}
    assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
    assert outcomes["produce"][0][0] == "RuntimeError"


POSITION_CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("assign a string", lambda c: c.assign("x")),
    ("assign a list of ints", lambda c: c.assign([1])),
    ("assign one partition", lambda c: c.assign(TP)),
    ("seek a string", lambda c: c.seek("x")),
    ("seek unassigned", lambda c: c.seek(TopicPartition("t", 0, 5))),
    ("unassign from nothing", lambda c: c.incremental_unassign([TopicPartition("t", 0)])),
    ("incremental_assign a string", lambda c: c.incremental_assign("x")),
    ("assign", lambda c: c.assign([TopicPartition("t", 0, 5)])),
    ("seek another partition", lambda c: c.seek(TopicPartition("t", 1, 5))),
    ("seek the assigned one", lambda c: c.seek(TopicPartition("t", 0, 7))),
    ("assign it again", lambda c: c.incremental_assign([TopicPartition("t", 0, 5)])),
    ("unassign one not assigned", lambda c: c.incremental_unassign([TopicPartition("t", 1)])),
    ("assignment", lambda c: c.assignment()),
    ("unassign it", lambda c: c.incremental_unassign([TopicPartition("t", 0)])),
    ("unassign", lambda c: c.unassign()),
    ("assignment after", lambda c: c.assignment()),
]


def test_partitions_and_positions_fail_and_answer_as_confluent_kafkas(consumers: tuple[Any, Consumer]) -> None:
    """assign, seek and their kin, in one sequence on each client: the same results and errors
    (the error codes too)."""
    raw, facade = consumers
    outcomes = {name: (outcome(partial(call, facade)), outcome(partial(call, raw))) for name, call in POSITION_CASES}
    assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
    assert outcomes["assign"][0] == ("ok", "None")


def test_subscribe_takes_confluent_kafkas_callbacks(consumers: tuple[Any, Consumer]) -> None:
    raw, facade = consumers

    def noop(consumer: Any, partitions: list[TopicPartition]) -> None:
        pass

    same(lambda: raw.subscribe(["t"], on_assign=noop, on_revoke=noop, on_lost=noop),
         lambda: facade.subscribe(["t"], on_assign=noop, on_revoke=noop, on_lost=noop))  # fmt: skip
    same(raw.unsubscribe, facade.unsubscribe)


def test_pass_throughs_answer_for_the_cluster_in_use(consumers: tuple[Any, Consumer]) -> None:
    raw, facade = consumers
    assert facade.memberid() == raw.memberid()
    assert facade.assignment() == raw.assignment() == []
    same(lambda: raw.get_watermark_offsets(TP, cached=True), lambda: facade.get_watermark_offsets(TP, cached=True))


# -- what the SDK keeps for itself ----------------------------------------------------------

RID = RecordId(bytes(range(16)), 0, 4)


def test_messages_are_handed_out_without_the_identity_header(consumers: tuple[Any, Consumer]) -> None:
    _, facade = consumers
    facade._state.logical = {"t": "t", "kafka-b.t": "t"}
    fetcher = facade._fetcher
    only_ours = fetcher.accept(Message(topic="t", partition=0, offset=4, value=b"a",
                                       headers=[(HEADER, RID.encode())], timestamp=(1, 5)))  # fmt: skip
    assert only_ours is not None and only_ours.headers() is None, "no header left: None, as confluent-kafka"
    assert getattr(only_ours, "hs_id", None) == RID
    assert (only_ours.topic(), only_ours.offset(), only_ours.value(), only_ours.timestamp()) == ("t", 4, b"a", (1, 5))
    rid = RecordId(bytes(range(16)), 0, 5)
    mixed = fetcher.accept(Message(topic="kafka-b.t", partition=0, offset=9, value=b"b",
                                   headers=[("x", b"1"), (HEADER, rid.encode()), ("y", None)]))  # fmt: skip
    assert mixed is not None and mixed.headers() == [("x", b"1"), ("y", None)]
    assert mixed.topic() == "t" and getattr(mixed, "physical_topic", None) == "kafka-b.t"
    plain = fetcher.accept(Message(topic="t", partition=0, offset=10, value=b"c", headers=[("x", b"1")]))
    assert plain is not None and plain.headers() == [("x", b"1")] and getattr(plain, "hs_id", 0) is None
    none = fetcher.accept(Message(topic="t", partition=0, offset=11, value=b"d"))
    assert none is not None and none.headers() is None


def test_error_events_of_a_missing_copy_are_not_handed_out(consumers: tuple[Any, Consumer]) -> None:
    _, facade = consumers
    facade._state.logical = {"t": "t", "kafka-b.t": "t"}
    fetcher = facade._fetcher
    unknown = KafkaError.UNKNOWN_TOPIC_OR_PART
    copy = Message(topic="kafka-b.t", error=KafkaError(unknown, "Subscribed topic not available"))
    assert fetcher.accept(copy) is None
    named = Message(error=KafkaError(unknown, "Subscribed topic not available: kafka-b.t: Broker: Unknown topic"))
    assert fetcher.accept(named) is None
    own = Message(topic="t", error=KafkaError(unknown, "Subscribed topic not available: t"))
    assert fetcher.accept(own) is own, "the application's own topic: as confluent-kafka"
    other = Message(topic="kafka-b.t", error=KafkaError(KafkaError._TRANSPORT, "down"))
    assert fetcher.accept(other) is other


def test_a_loss_fetched_with_an_error_event_is_told_at_the_next_poll(consumers: tuple[Any, Consumer]) -> None:
    """confluent-kafka's poll returns the error (``_MAX_POLL_EXCEEDED``) and serves the loss
    queued behind it at the next poll; one batch fetch got both."""
    _, facade = consumers
    state, fetcher = facade._state, facade._fetcher
    told: list[str] = []
    state.lost_tells.append(lambda: told.append("lost"))
    fetcher._after_fetch([Message(error=KafkaError(KafkaError._MAX_POLL_EXCEEDED))])
    assert told == [], "not with the error"
    facade.poll(0)
    assert told == ["lost"], "first thing at the next poll"
    state.lost_tells.append(lambda: told.append("lost again"))
    fetcher._after_fetch([Message(topic="t", partition=0, offset=1, value=b"a")])
    assert told == ["lost", "lost again"], "a fetch without an error tells at once"
