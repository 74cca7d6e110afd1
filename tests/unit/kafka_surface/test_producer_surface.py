"""The Kafka facades are made, and the producer fails and answers, as confluent-kafka's clients
do: each case runs on the raw client and on the facade and compares the exception type and
message (or the result). No broker (the cluster's port is closed) and no etcd (an in-memory
config center)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.configcenter import ConfigCenter
from tests.support import wait_for
from tests.unit.kafka_surface.support import PRODUCER_CALLS, RAW, ROUTE, outcome, same

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


def test_a_record_with_a_callback_times_out_as_confluent_kafkas_also_without_one_of_its_own(
    center: ConfigCenter,
) -> None:
    """Records produced without a callback are acknowledged quietly (the raw producer runs
    without a message timeout); a record with one still hears ``_MSG_TIMED_OUT`` after
    ``message.timeout.ms``, once, as with confluent-kafka; the quiet ones stay pending."""
    settings = {"message.timeout.ms": 1000}
    raw = confluent_kafka.Producer({**RAW, **settings})
    facade = Producer({**ROUTE, **settings}, center=center)
    heard: dict[str, list[tuple[str, bytes]]] = {"raw": [], "facade": []}
    try:
        for name, client in (("raw", raw), ("facade", facade)):
            client.produce("t", b"quiet", partition=0)
            client.produce("t", b"told", partition=0,
                           on_delivery=lambda err, msg, n=name: heard[n].append((err.name(), msg.value())))  # fmt: skip
        wait_for(lambda: [c.poll(0.1) for c in (raw, facade)] and heard["raw"] and heard["facade"], 15,
                 "both timeouts reported")  # fmt: skip
        assert heard["raw"] == heard["facade"] == [("_MSG_TIMED_OUT", b"told")]
        assert len(facade) == 1, "the facade keeps the record without a callback (the raw one dropped it)"
        facade.purge()
        assert len(facade) == 0, "purged: given up, as the application asked"
    finally:
        raw.close(0)
        facade.close(0)


def test_the_warning_about_the_gapless_guarantee_the_sdk_chose_is_not_logged(center: ConfigCenter) -> None:
    """librdkafka warns that ``enable.gapless.guarantee`` is experimental on every producer
    made with it; the SDK chose it (a producer without callbacks), so it is not passed on."""
    import logging

    from hotstandby.adapters.kafka.client_logs import LIBRDKAFKA_LOGGER

    heard: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record.getMessage())

    handler, level = Keep(), LIBRDKAFKA_LOGGER.level
    LIBRDKAFKA_LOGGER.addHandler(handler)
    LIBRDKAFKA_LOGGER.setLevel(logging.DEBUG)
    try:
        raw = confluent_kafka.Producer({**RAW, "enable.idempotence": True, "enable.gapless.guarantee": True,
                                        "logger": logging.getLogger("tests.raw")})  # fmt: skip
        logging.getLogger("tests.raw").addHandler(handler)
        raw.poll(0.1)
        said, heard[:] = list(heard), []
        assert any("enable.gapless.guarantee is experimental" in line for line in said), said
        facade = Producer(ROUTE, center=center)
        facade.poll(0.1)
        assert not any("gapless" in line for line in heard), heard
        facade.close(0)
        raw.close(0)
    finally:
        LIBRDKAFKA_LOGGER.removeHandler(handler)
        LIBRDKAFKA_LOGGER.setLevel(level)
        logging.getLogger("tests.raw").removeHandler(handler)
