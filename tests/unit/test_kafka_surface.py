"""The Kafka facades fail and answer as confluent-kafka's clients do: each case runs on the raw
client and on the facade and compares the exception type and message (or the result). No broker
(the cluster's port is closed) and no etcd (an in-memory config center)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import HEADER, RecordId


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


BROKER = f"127.0.0.1:{_closed_port()}"


@pytest.fixture
def center() -> ConfigCenter:
    center = ConfigCenter(MemoryStore())
    center.put_cluster(ClusterSpec(name="kafka-a", kind="kafka", url=BROKER))
    center.create_route("r", ["kafka-a"], "kafka-a")
    return center


ROUTE = {"hotstandby.route": "r", "hotstandby.etcd": f"127.0.0.1:{_closed_port()}"}
RAW = {"bootstrap.servers": BROKER}


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    """(exception type, message) of ``call()``, or ("ok", repr of the result)."""
    try:
        result = call()
    except Exception as exc:  # the point: any type, compared with the raw client's
        return type(exc).__name__, str(exc)
    return "ok", repr(result)


def same(raw: Callable[[], Any], facade: Callable[[], Any]) -> tuple[str, str]:
    expected, got = outcome(raw), outcome(facade)
    assert got == expected
    return got


@pytest.fixture
def producers(center: ConfigCenter) -> Iterator[tuple[confluent_kafka.Producer, Producer]]:
    raw = confluent_kafka.Producer(RAW)
    facade = Producer(ROUTE, center=center)
    yield raw, facade
    for client in (raw, facade):
        if len(client):
            client.purge()
        client.close(0)


@pytest.fixture
def consumers(center: ConfigCenter) -> Iterator[tuple[confluent_kafka.Consumer, Consumer]]:
    # No auto commit: closing would wait for a commit to the broker that is not there.
    group = {"group.id": "g", "enable.auto.commit": False}
    raw = confluent_kafka.Consumer({**RAW, **group})
    facade = Consumer({**ROUTE, **group}, center=center)
    yield raw, facade
    raw.close()
    facade.close()


# -- construction ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), (None,), ("x",), (1,)])
def test_construction_without_a_configuration_dict(args: tuple[Any, ...], center: ConfigCenter) -> None:
    assert same(lambda: confluent_kafka.Producer(*args), lambda: Producer(*args, center=center))[0] == "TypeError"
    assert same(lambda: confluent_kafka.Consumer(*args), lambda: Consumer(*args, center=center))[0] == "TypeError"


def test_a_consumer_without_group_id(center: ConfigCenter) -> None:
    assert same(lambda: confluent_kafka.Consumer(RAW), lambda: Consumer(ROUTE, center=center))[0] == "ValueError"


def test_keywords_are_configuration_properties(center: ConfigCenter) -> None:
    consumer = Consumer(ROUTE, center=center, **{"group.id": "g"})
    try:
        assert consumer.group == "g"
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("cls", "setting"),
    [
        ("Producer", {"queue.buffering.max.messages": "many"}),
        ("Producer", {"queue.buffering.max.kbytes": [1]}),
        ("Producer", {"message.timeout.ms": "soon"}),
        ("Consumer", {"auto.commit.interval.ms": "often"}),
        ("Consumer", {"enable.auto.commit": "maybe"}),
        ("Consumer", {"enable.auto.offset.store": "perhaps"}),
        ("Consumer", {"session.timeout.ms": "long"}),
    ],
)
def test_a_bad_setting_value(cls: str, setting: dict[str, Any], center: ConfigCenter) -> None:
    group = {"group.id": "g"} if cls == "Consumer" else {}
    raw_cls, facade_cls = getattr(confluent_kafka, cls), {"Producer": Producer, "Consumer": Consumer}[cls]
    kind, _ = same(lambda: raw_cls({**RAW, **group, **setting}), lambda: facade_cls({**ROUTE, **group, **setting},
                                                                                     center=center))  # fmt: skip
    assert kind == "KafkaException"


TXN_CALLS: dict[str, Callable[[Any], Any]] = {
    "begin_transaction": lambda p: p.begin_transaction(),
    "produce": lambda p: p.produce("t", b"v", partition=0),
    "commit_transaction": lambda p: p.commit_transaction(0.1),
    "abort_transaction": lambda p: p.abort_transaction(0.1),
    "init_transactions": lambda p: p.init_transactions(0.2),  # no broker: times out
}


# (closing a client whose init_transactions timed out: confluent-kafka warns that it could not abort)
@pytest.mark.filterwarnings("ignore:Producer abort_transaction failed during close:RuntimeWarning")
@pytest.mark.parametrize("transactional", [True, False])
def test_transactional_calls_before_init_fail_as_confluent_kafkas(transactional: bool, center: ConfigCenter) -> None:
    setting = {"transactional.id": "t"} if transactional else {}
    raw, facade = confluent_kafka.Producer({**RAW, **setting}), Producer({**ROUTE, **setting}, center=center)
    try:
        outcomes = {
            name: (outcome(partial(call, facade)), outcome(partial(call, raw))) for name, call in TXN_CALLS.items()
        }
        assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
        failed = {name for name, ((kind, _), _) in outcomes.items() if kind == "KafkaException"}
        assert failed == set(TXN_CALLS) - ({"produce"} if not transactional else set())
    finally:
        for client in (raw, facade):
            client.purge()
            client.close(0)


def test_send_offsets_to_transaction_is_refused_clearly(producers: tuple[Any, Producer]) -> None:
    _, facade = producers
    with pytest.raises(KafkaException, match="ack ledger") as info:
        facade.send_offsets_to_transaction([TopicPartition("t", 0, 1)], None)
    assert info.value.args[0].code() == KafkaError._NOT_IMPLEMENTED


# -- producing ------------------------------------------------------------------------------


BAD_RECORDS: list[dict[str, Any]] = [
    {"headers": [("a", 1)]},
    {"headers": [("a", b"1", 3)]},
    {"headers": 5},
    {"headers": "abc"},
    {"headers": ["ab"]},
    {"headers": {"a": 1}},
    {"value": 5},
    {"key": 5},
    {"value": bytearray(b"v")},
    {"key": memoryview(b"k")},
]


@pytest.mark.parametrize("record", BAD_RECORDS)
def test_malformed_records(record: dict[str, Any], producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    kind, _ = same(lambda: raw.produce("t", partition=0, **record), lambda: facade.produce("t", partition=0, **record))
    assert kind == "TypeError"


@pytest.mark.parametrize("record", [{"headers": [("a", None)]}, {"headers": [(1, b"x")]}, {"headers": {"a": "t"}},
                                    {"key": "text"}])  # fmt: skip
def test_records_that_confluent_kafka_takes(record: dict[str, Any], producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    assert (
        same(lambda: raw.produce("t", partition=0, **record), lambda: facade.produce("t", partition=0, **record))[0]
        == "ok"
    )


def test_producer_length_truth_and_close(producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    assert bool(facade) is bool(raw) is True  # with nothing pending too
    assert len(facade) == 0  # (librdkafka's length counts its own requests too)
    facade.produce("t", b"v", partition=0)
    assert len(facade) == 1
    raw.purge()
    facade.purge()
    same(lambda: raw.close(0), lambda: facade.close(0))
    assert facade.close(0) is True  # twice: as confluent-kafka's
    assert len(facade) == len(raw) == 0 and bool(facade)


PRODUCER_CALLS: dict[str, Callable[[Any], Any]] = {
    "produce": lambda p: p.produce("t", b"v", partition=0),
    "produce (metadata)": lambda p: p.produce("t", b"v"),
    "poll": lambda p: p.poll(0),
    "flush": lambda p: p.flush(0),
    "purge": lambda p: p.purge(),
    "list_topics": lambda p: p.list_topics(timeout=0.1),
    "cluster_id": lambda p: p.cluster_id(0.1),
    "set_sasl_credentials": lambda p: p.set_sasl_credentials("u", "p"),
    "produce_batch": lambda p: p.produce_batch("t", [{"value": b"v", "partition": 0}]),
    "init_transactions": lambda p: p.init_transactions(0.1),
    "begin_transaction": lambda p: p.begin_transaction(),
    "commit_transaction": lambda p: p.commit_transaction(0.1),
    "abort_transaction": lambda p: p.abort_transaction(0.1),
}


def test_producer_calls_after_close(producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    raw.close(0)
    facade.close(0)
    outcomes = {
        name: (outcome(partial(call, facade)), outcome(partial(call, raw))) for name, call in PRODUCER_CALLS.items()
    }
    assert {name: got for name, (got, expected) in outcomes.items() if got != expected} == {}
    assert {kind for (kind, _), _ in outcomes.values()} == {"RuntimeError"}


BAD_BATCHES: list[Any] = [
    (),
    [{"value": b"a", "partition": 0}, {"value": 5, "partition": 0}],
    [{"value": b"a"}, 5],
    [{"key": 5}],
    [{"value": b"v", "partition": "x"}],
    [{"value": b"v", "timestamp": 1}],
]


@pytest.mark.parametrize("batch", BAD_BATCHES)
def test_malformed_batches(batch: Any, producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    assert same(lambda: raw.produce_batch("t", batch), lambda: facade.produce_batch("t", batch))[0] != "ok"
    assert len(facade) == 0, "checked before anything is produced"


BAD_BATCH_CALLS: dict[str, Callable[[Any], Any]] = {
    "no topic": lambda p: p.produce_batch(None, [{"value": b"v"}]),
    "a partition that is not a number": lambda p: p.produce_batch("t", [{"value": b"v"}], partition="a"),
    "a batch of tuples": lambda p: p.produce_batch("t", ({"value": b"v"},)),
}


@pytest.mark.parametrize("call", BAD_BATCH_CALLS.values(), ids=BAD_BATCH_CALLS.keys())
def test_malformed_batch_arguments(call: Callable[[Any], Any], producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    assert same(partial(call, raw), partial(call, facade))[0] == "TypeError"


def test_a_batch_reports_through_callback_else_on_delivery(producers: tuple[Any, Producer]) -> None:
    """As confluent-kafka's: ``callback`` and ``on_delivery`` are aliases, ``callback`` wins,
    a message's own ``callback`` wins over both; a ``None`` partition is the batch's."""
    _, facade = producers
    heard: list[str] = []
    batch = [{"value": b"a", "partition": None}, {"value": b"b", "callback": lambda e, m: heard.append("own")}]
    assert facade.produce_batch("t", batch, 0, callback=lambda e, m: heard.append("callback"),
                                on_delivery=lambda e, m: heard.append("on_delivery")) == 2  # fmt: skip
    assert facade.produce_batch("t", [{"value": b"c"}], 0, on_delivery=lambda e, m: heard.append("on_delivery")) == 1
    facade.purge()  # no broker: every record reports the purge
    assert sorted(heard) == ["callback", "on_delivery", "own"]


def test_an_empty_batch_is_zero_records_also_once_closed(producers: tuple[Any, Producer]) -> None:
    raw, facade = producers
    raw.close(0)
    facade.close(0)
    assert same(lambda: raw.produce_batch("t", []), lambda: facade.produce_batch("t", [])) == ("ok", "0")


def test_produce_batch_queues_each_message(producers: tuple[Any, Producer]) -> None:
    _, facade = producers
    assert facade.produce_batch("t", [{"value": b"a", "key": "k"}, {"value": "b", "partition": 0}], partition=0) == 2
    assert len(facade) == 2


# -- consuming ------------------------------------------------------------------------------


def test_consumer_close_and_truth(consumers: tuple[Any, Consumer]) -> None:
    raw, facade = consumers
    assert bool(facade) is bool(raw) is True
    same(raw.close, facade.close)
    same(raw.close, facade.close)  # twice


TP = TopicPartition("t", 0)
CONSUMER_CALLS: dict[str, Callable[[Any], Any]] = {
    "poll": lambda c: c.poll(0),
    "consume": lambda c: c.consume(1, 0),
    "subscribe": lambda c: c.subscribe(["t"]),
    "unsubscribe": lambda c: c.unsubscribe(),
    "assignment": lambda c: c.assignment(),
    "commit": lambda c: c.commit(),
    "store_offsets": lambda c: c.store_offsets(offsets=[TopicPartition("t", 0, 1)]),
    "committed": lambda c: c.committed([TP]),
    "position": lambda c: c.position([TP]),
    "pause": lambda c: c.pause([TP]),
    "resume": lambda c: c.resume([TP]),
    "memberid": lambda c: c.memberid(),
    "consumer_group_metadata": lambda c: c.consumer_group_metadata(),
    "get_watermark_offsets": lambda c: c.get_watermark_offsets(TP, timeout=0.1),
    "offsets_for_times": lambda c: c.offsets_for_times([TopicPartition("t", 0, 0)], timeout=0.1),
    "list_topics": lambda c: c.list_topics(timeout=0.1),
    "cluster_id": lambda c: c.cluster_id(0.1),
    "set_sasl_credentials": lambda c: c.set_sasl_credentials("u", "p"),
    "assign": lambda c: c.assign([TP]),
    "unassign": lambda c: c.unassign(),
    "incremental_assign": lambda c: c.incremental_assign([TP]),
    "incremental_unassign": lambda c: c.incremental_unassign([TP]),
    "seek": lambda c: c.seek(TopicPartition("t", 0, 0)),
}


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
