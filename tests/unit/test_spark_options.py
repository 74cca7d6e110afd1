"""The Spark source's options: what parse_options accepts, refuses and defaults (no Spark needed)."""

from __future__ import annotations

import pytest

from hotstandby.errors import ConfigError, ValidationError
from hotstandby.spark_integration.source.options import EARLIEST, LATEST, MessageIds, SourceOptions, parse_options

ETCD = "10.0.0.5:2379"  # explicit, so HOTSTANDBY_* variables do not matter


def opts(**extra: str) -> dict[str, str]:
    """A minimal valid streaming configuration plus ``extra`` (dots spelled as ``__``)."""
    base = {"hotstandby.route": "orders", "hotstandby.group": "etl", "hotstandby.etcd": ETCD, "subscribe": "orders"}
    base.update({k.replace("__", "."): v for k, v in extra.items()})
    return base


def batch_opts(**extra: str) -> dict[str, str]:
    base = opts(**extra)
    del base["hotstandby.group"]
    return base


# --- required keys and the subscription -------------------------------------------------------


def test_a_minimal_streaming_configuration() -> None:
    got = parse_options(opts(), streaming=True)
    assert (got.route, got.group, got.topics, got.pattern, dict(got.assign)) == ("orders", "etl", ("orders",), None, {})
    assert [str(e) for e in got.settings.etcd] == [ETCD] and got.client == {}


@pytest.mark.parametrize("route", [None, "", "   "])
def test_route_is_required(route: str | None) -> None:
    given = opts()
    if route is None:
        del given["hotstandby.route"]
    else:
        given["hotstandby.route"] = route
    with pytest.raises(ValidationError) as err:
        parse_options(given, streaming=False)
    assert err.value.key == "hotstandby.route"


def test_route_is_stripped() -> None:
    assert parse_options(opts(hotstandby__route="  orders "), streaming=True).route == "orders"


@pytest.mark.parametrize(
    "subscription",
    [
        {},
        {"subscribe": "a", "subscribePattern": "a.*"},
        {"subscribe": "a", "assign": '{"a": [0]}'},
        {"subscribePattern": "a.*", "assign": '{"a": [0]}'},
        {"subscribe": "a", "subscribePattern": "a.*", "assign": '{"a": [0]}'},
    ],
)
def test_exactly_one_of_subscribe_pattern_or_assign(subscription: dict[str, str]) -> None:
    given = opts()
    del given["subscribe"]
    given.update(subscription)
    with pytest.raises(ValidationError, match="exactly one of subscribe, subscribePattern or assign"):
        parse_options(given, streaming=True)


def test_each_kind_of_subscription_alone_is_accepted() -> None:
    base = opts()
    del base["subscribe"]
    sub = parse_options({**base, "subscribe": " a, b ,,c "}, streaming=True)
    assert sub.topics == ("a", "b", "c") and sub.pattern is None and not sub.assign
    pat = parse_options({**base, "subscribePattern": "ord.*"}, streaming=True)
    assert pat.topics == () and pat.pattern == "ord.*" and not pat.assign
    asg = parse_options({**base, "assign": '{"a": [3, 1, 1], "b": []}'}, streaming=True)
    assert asg.topics == () and asg.pattern is None and dict(asg.assign) == {"a": (1, 3), "b": ()}


def test_an_empty_subscribe_is_refused() -> None:
    with pytest.raises(ValidationError, match="no topic given"):
        parse_options(opts(subscribe=" , "), streaming=True)


def test_a_bad_pattern_and_a_bad_assign_are_refused() -> None:
    base = opts()
    del base["subscribe"]
    with pytest.raises(ValidationError) as err:
        parse_options({**base, "subscribePattern": "ord(ers"}, streaming=True)
    assert err.value.key == "subscribePattern"
    for bad in ("not json", '["a"]', '{"a": [-1]}', '{"a": 0}', '{"a": ["0"]}'):
        with pytest.raises(ValidationError) as err:
            parse_options({**base, "assign": bad}, streaming=True)
        assert err.value.key == "assign", bad


# --- refused keys -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["kafka.bootstrap.servers", "KAFKA.Bootstrap.Servers", "kafka.metadata.broker.list"])
def test_a_kafka_cluster_setting_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options({**opts(), key: "broker:9092"}, streaming=True)
    assert type(err.value) is ConfigError
    assert repr(key.lower()) in str(err.value)
    assert "orders" in str(err.value)  # names the route the cluster comes from


@pytest.mark.parametrize("key", ["bootstrap.servers", "serviceUrl", "service.url"])
def test_a_bare_cluster_setting_is_refused(key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options({**opts(), key: "x"}, streaming=True)
    assert repr(key.lower()) in str(err.value)


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("kafka.group.id", "hotstandby.group"),
        ("kafka.auto.offset.reset", "startingOffsets"),
        ("kafka.enable.auto.commit", "commits its progress itself"),
    ],
)
def test_kafka_settings_the_source_owns_are_refused(key: str, hint: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_options({**opts(), key: "x"}, streaming=True)
    assert repr(key) in str(err.value) and hint in str(err.value)


@pytest.mark.parametrize("key", ["noSuchOption", "startingOffset", "hotstandby.unknown", "hotstandby.Routes"])
def test_unknown_options_are_refused(key: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_options({**opts(), key: "1"}, streaming=True)
    assert err.value.key == key.lower()


def test_path_is_ignored() -> None:
    assert parse_options({**opts(), "path": "whatever"}, streaming=True).route == "orders"


# --- streaming versus batch ---------------------------------------------------------------------


def test_streaming_requires_a_group_batch_does_not() -> None:
    with pytest.raises(ValidationError) as err:
        parse_options(batch_opts(), streaming=True)
    assert err.value.key == "hotstandby.group"
    with pytest.raises(ValidationError):
        parse_options({**batch_opts(), "hotstandby.group": "  "}, streaming=True)
    got = parse_options(batch_opts(), streaming=False)
    assert got.group is None
    with pytest.raises(ValidationError):
        got.require_group()
    assert parse_options(opts(), streaming=False).require_group() == "etl"


def test_ending_offsets_only_for_batch_and_never_earliest() -> None:
    with pytest.raises(ValidationError) as err:
        parse_options(opts(endingOffsets="latest"), streaming=True)
    assert err.value.key == "endingOffsets"
    for earliest in ("earliest", " EARLIEST "):
        with pytest.raises(ValidationError, match=r"earliest \(-2\) is not allowed"):
            parse_options(batch_opts(endingOffsets=earliest), streaming=False)
    with pytest.raises(ValidationError, match=r"earliest \(-2\) is not allowed"):
        parse_options(batch_opts(endingOffsets='{"t": {"0": -2}}'), streaming=False)
    assert parse_options(batch_opts(endingOffsets="Latest"), streaming=False).ending == LATEST
    assert parse_options(batch_opts(endingOffsets='{"t": {"0": 5}}'), streaming=False).ending == {"t": {0: 5}}


# --- positions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "want"), [("earliest", EARLIEST), ("LATEST", LATEST), (" Earliest ", EARLIEST)])
def test_starting_offsets_words(text: str, want: str) -> None:
    assert parse_options(opts(startingOffsets=text), streaming=True).starting == want


def test_starting_offsets_json_has_integer_partitions() -> None:
    got = parse_options(opts(startingOffsets='{"orders": {"0": 23, "10": -2, "2": -1}, "b": {}}'), streaming=True)
    assert got.starting == {"orders": {0: 23, 10: -2, 2: -1}, "b": {}}
    assert all(isinstance(p, int) for p in got.starting["orders"])  # type: ignore[index]


@pytest.mark.parametrize(
    "bad",
    [
        '{"orders": {"0": -3}}',
        '{"orders": {"x": 1}}',
        '{"orders": {"0": "abc"}}',
        '{"orders": [0, 300]}',
        '{"orders": []}',
        '{"orders": "middle"}',
        '{"a": [8, 1], "b": {"0": 1}}',
        '["orders"]',
        "somewhere",
        "{",
    ],
)
def test_bad_starting_offsets_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_options(opts(startingOffsets=bad), streaming=True)
    assert err.value.key == "startingOffsets"


def test_starting_offsets_as_pulsar_message_ids() -> None:
    text = '{"persistent://public/default/p-partition-1": [8, 11, 16, -101], "q": "Earliest", "r": "latest"}'
    got = parse_options(opts(startingOffsets=text), streaming=True).starting
    assert got == MessageIds({"persistent://public/default/p-partition-1": "080b109b", "q": EARLIEST, "r": LATEST})


def test_message_ids_are_no_ending_offsets() -> None:
    with pytest.raises(ValidationError) as err:
        parse_options(opts(endingOffsets='{"t": [8, 1]}'), streaming=False)
    assert err.value.key == "endingOffsets"


def test_starting_offsets_and_timestamp_together_are_refused() -> None:
    with pytest.raises(ValidationError) as err:
        parse_options(opts(startingOffsets="earliest", startingTimestamp="1700000000000"), streaming=True)
    assert err.value.key == "startingTimestamp"
    got = parse_options(opts(startingTimestamp="1700000000000"), streaming=True)
    assert got.starting_timestamp == 1_700_000_000_000 and got.starting == LATEST


def test_defaults() -> None:
    stream = parse_options(opts(), streaming=True)
    batch = parse_options(batch_opts(), streaming=False)
    assert (stream.starting, batch.starting) == (LATEST, EARLIEST)
    assert stream.ending == batch.ending == LATEST
    for got in (stream, batch):
        assert got.dedupe is True
        assert got.drain_timeout_ms == 10_000
        assert got.timestamp_skew_ms == 5_000
        assert got.poll_timeout_ms == 120_000
        assert got.fail_on_data_loss is True and got.include_headers is False
        assert got.starting_timestamp is None and got.max_per_trigger is None and got.min_partitions is None


def test_explicit_values_including_a_zero_drain_timeout() -> None:
    got = parse_options(
        opts(
            hotstandby__drain__timeout__ms="0",
            hotstandby__timestamp__skew__ms="0",
            hotstandby__dedupe="false",
            failOnDataLoss="no",
            includeHeaders="1",
            minPartitions="7",
            kafkaConsumer__pollTimeoutMs="500",
            hotstandby__etcd__timeout__ms="2500",
            hotstandby__namespace="/ns",
        ),
        streaming=True,
    )
    assert (got.drain_timeout_ms, got.timestamp_skew_ms) == (0, 0)
    assert (got.dedupe, got.fail_on_data_loss, got.include_headers) == (False, False, True)
    assert (got.min_partitions, got.poll_timeout_ms) == (7, 500)
    assert got.settings.etcd_timeout == 2.5 and got.settings.namespace == "/ns"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("maxOffsetsPerTrigger", "0"),
        ("maxOffsetsPerTrigger", "ten"),
        ("maxEntriesPerTrigger", "0"),
        ("maxEntriesPerTrigger", "-2"),
        ("minPartitions", "-1"),
        ("hotstandby.drain.timeout.ms", "-1"),
        ("startingTimestamp", "-5"),
        ("hotstandby.dedupe", "maybe"),
        ("kafkaConsumer.pollTimeoutMs", "0"),
    ],
)
def test_bad_values_are_refused(key: str, value: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_options({**opts(), key: value}, streaming=True)
    assert err.value.key.lower() == key.lower()


@pytest.mark.parametrize("key", ["maxOffsetsPerTrigger", "MAXOFFSETSPERTRIGGER", "maxoffsetspertrigger"])
def test_keys_are_case_insensitive(key: str) -> None:
    given = {**opts(), key: "1000"}
    given["HotStandby.Route"] = given.pop("hotstandby.route")
    given["SUBSCRIBE"] = given.pop("subscribe")
    got = parse_options(given, streaming=True)
    assert (got.max_per_trigger, got.route, got.topics) == (1000, "orders", ("orders",))


def test_max_entries_per_trigger_is_a_count_or_minus_one_for_no_cap() -> None:
    assert parse_options({**opts(), "maxEntriesPerTrigger": "500"}, streaming=True).trigger_limit == 500
    assert parse_options({**opts(), "maxEntriesPerTrigger": "-1"}, streaming=True).trigger_limit is None
    assert parse_options({**opts(), "maxOffsetsPerTrigger": "7"}, streaming=True).trigger_limit == 7


def test_kafka_settings_pass_through_without_the_prefix() -> None:
    got = parse_options(
        opts(kafka__security__protocol="SASL_SSL", kafka__fetch__max__bytes="1048576"),
        streaming=True,
    )
    assert dict(got.client) == {"security.protocol": "SASL_SSL", "fetch.max.bytes": "1048576"}


# --- what a subscription covers -----------------------------------------------------------------


def _subscribed(**subscription: str) -> SourceOptions:
    given = opts()
    del given["subscribe"]
    given.update(subscription)
    return parse_options(given, streaming=True)


def test_wants_for_subscribe() -> None:
    got = _subscribed(subscribe="orders,payments")
    assert [got.wants(t) for t in ("orders", "payments", "order", "kafka-a.orders")] == [True, True, False, False]
    assert got.wants_partition("orders", 0) and got.wants_partition("payments", 99)
    assert not got.wants_partition("refunds", 0)


def test_wants_for_a_pattern_is_a_full_match() -> None:
    got = _subscribed(subscribePattern="ord.*s")
    assert [got.wants(t) for t in ("orders", "ords", "xorders", "orders2", "order")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert got.wants_partition("orders", 12) and not got.wants_partition("orders2", 0)


def test_wants_for_assign_covers_only_the_given_partitions() -> None:
    got = _subscribed(assign='{"orders": [0, 2], "payments": []}')
    assert got.wants("orders") and got.wants("payments") and not got.wants("refunds")
    assert [got.wants_partition("orders", p) for p in range(4)] == [True, False, True, False]
    assert not got.wants_partition("payments", 0) and not got.wants_partition("refunds", 0)
