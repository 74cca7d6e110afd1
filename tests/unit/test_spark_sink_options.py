"""The sink's options, the columns it takes per route kind, and the identity session of a task."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from hotstandby.errors import ConfigError, ValidationError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.spark_integration.sink.identity import task_session
from hotstandby.spark_integration.sink.options import parse_sink_options
from hotstandby.spark_integration.sink.sink import check_columns

BASE = {"hotstandby.route": "orders", "hotstandby.etcd": "127.0.0.1:2379"}


def test_options_in_any_case_with_the_clients_settings_passed_on() -> None:
    got = parse_sink_options({**BASE, "Topic": "t", "hotstandby.writeId": "w1", "kafka.linger.ms": "5",
                              "pulsar.producer.batching_enabled": "false", "checkpointLocation": "/ck"})  # fmt: skip
    assert (got.route, got.topic, got.write_id, got.flush_timeout_ms) == ("orders", "t", "w1", 120_000)
    assert got.kafka == {"linger.ms": "5"} and got.pulsar_producer == {"batching_enabled": False}


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({}, ValidationError, "hotstandby.route"),
        ({**BASE, "kafka.bootstrap.servers": "x:1"}, ConfigError, "kafka.bootstrap.servers"),
        ({**BASE, "pulsar.client.service_url": "pulsar://x"}, ConfigError, "service_url"),
        ({**BASE, "hotstandby.group": "g"}, ValidationError, "unknown option"),
        ({**BASE, "startingOffsets": "earliest"}, ValidationError, "unknown sink option"),
        ({**BASE, "hotstandby.flush.timeout.ms": "0"}, ValidationError, "positive"),
    ],
)
def test_refused_options_name_the_problem(options: dict[str, str], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_sink_options(options)


def _schema(*names: str) -> StructType:
    return StructType([StructField(n, LongType() if n == "partition" else BinaryType()) for n in names])


def test_the_columns_of_each_route_kind() -> None:
    with_topic = parse_sink_options({**BASE, "topic": "t"})
    without = parse_sink_options(BASE)
    check_columns("kafka", _schema("key", "value", "partition", "headers"), with_topic)
    check_columns(
        "kafka", StructType([StructField("value", StringType()), StructField("topic", StringType())]), without
    )
    check_columns("pulsar", _schema("value", "__key", "__eventTime", "__messageProperties"), with_topic)
    with pytest.raises(ConfigError, match="needs a value column"):
        check_columns("kafka", _schema("key"), with_topic)
    with pytest.raises(ConfigError, match="not __key"):
        check_columns("kafka", _schema("value", "__key"), with_topic)
    with pytest.raises(ConfigError, match="topic option or a __topic column"):
        check_columns("pulsar", _schema("value"), without)


def test_a_tasks_session_depends_on_the_write_the_batch_and_the_partition_only() -> None:
    first = task_session("query-1", 7, 3)
    assert len(first) == 16 and first == task_session("query-1", 7, 3)
    others = {task_session("query-2", 7, 3), task_session("query-1", 8, 3), task_session("query-1", 7, 4)}
    assert first not in others and len(others) == 3


def test_the_producer_session_setting_is_32_hex_digits() -> None:
    options, _ = ClientOptions.split({"hotstandby.route": "r", "hotstandby.producer.session": "ab" * 16}, role="p")
    assert options.producer_session == bytes.fromhex("ab" * 16)
    for bad in ("ab", "zz" * 16, 5):
        with pytest.raises(ValidationError, match=r"hotstandby\.producer\.session"):
            ClientOptions.split({"hotstandby.route": "r", "hotstandby.producer.session": bad}, role="p")
