from __future__ import annotations

import json
import time

import pytest

from hotstandby.configcenter.documents import (
    ClusterSpec,
    Link,
    Route,
    check_floor,
    check_route,
    check_route_update,
    resolve_secret_refs,
)
from hotstandby.errors import StaleEpochError, UnknownClusterError, ValidationError


def route_json(**overrides: object) -> str:
    doc = {"active": "kafka-a", "clusters": ["kafka-a", "kafka-b"], "epoch": 3}
    doc.update(overrides)
    return json.dumps(doc)


def test_cluster_roundtrip_keeps_role_settings() -> None:
    raw = json.dumps({"kind": "kafka", "bootstrap.servers": "h1:9092,h2:9092", "client": {"acks": "all"},
                      "consumer": {"session.timeout.ms": 6000}})  # fmt: skip
    spec = ClusterSpec.from_json("kafka-a", raw)
    assert ClusterSpec.from_json("kafka-a", spec.to_json()) == spec
    assert spec.endpoints() == [("h1", 9092), ("h2", 9092)]
    assert spec.client_config("consumer") == {"acks": "all", "session.timeout.ms": 6000}
    assert spec.client_config("producer") == {"acks": "all"}


def test_pulsar_cluster_needs_a_service_url() -> None:
    spec = ClusterSpec.from_json("p", json.dumps({"kind": "pulsar", "service_url": "pulsar://h:6650"}))
    assert spec.endpoints() == [("h", 6650)]
    with pytest.raises(ValidationError, match="service_url"):
        ClusterSpec.from_json("p", json.dumps({"kind": "pulsar", "bootstrap.servers": "h:1"}))
    with pytest.raises(ValidationError, match="pulsar://"):
        ClusterSpec.from_json("p", json.dumps({"kind": "pulsar", "service_url": "http://h:8080"}))


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{", "malformed JSON"),
        ("[1]", "JSON object"),
        ('{"kind": "rabbit", "url": "x"}', "'kind'"),
        ('{"kind": "kafka"}', "bootstrap.servers"),
        ('{"kind": "kafka", "bootstrap.servers": "nohostport"}', "host:port"),
        ('{"kind": "kafka", "bootstrap.servers": "h:1", "client": {"a": [1]}}', "'client'"),
    ],
)
def test_invalid_cluster_names_key_and_problem(raw: str, problem: str) -> None:
    with pytest.raises(ValidationError) as err:
        ClusterSpec.from_json("kafka-a", raw, key="/hotstandby/clusters/kafka-a")
    assert err.value.key == "/hotstandby/clusters/kafka-a"
    assert problem in err.value.problem


def test_secret_references_resolve_from_the_environment_only_when_used() -> None:
    spec = ClusterSpec(
        name="k", kind="kafka", url="h:1", client={"sasl.password": "${env:KAFKA_PW}", "x": "a${env:SUFFIX}"}
    )
    assert "${env:KAFKA_PW}" in spec.to_json()  # stored as a reference, never as the secret
    assert resolve_secret_refs(spec.client, {"KAFKA_PW": "s3cret", "SUFFIX": "b"}) == {
        "sasl.password": "s3cret",
        "x": "ab",
    }
    with pytest.raises(ValidationError, match="KAFKA_PW"):
        resolve_secret_refs(spec.client, {})


def test_route_roundtrip_and_flip() -> None:
    route = Route.from_json("orders", route_json(reason="r", by="b", at="t"))
    assert Route.from_json("orders", route.to_json()) == route
    flipped = route.flipped("kafka-b", reason="drill", by="sre")
    assert (flipped.active, flipped.epoch, flipped.reason, flipped.by) == ("kafka-b", 4, "drill", "sre")
    assert flipped.at and flipped.clusters == route.clusters
    assert flipped.at_ms is not None and abs(flipped.at_ms - time.time() * 1000) < 60_000


@pytest.mark.parametrize(
    ("at", "ms"),
    [
        ("2026-11-29T06:00:00.250+00:00", 1_795_932_000_250),
        ("2026-11-29T06:00:00.250Z", 1_795_932_000_250),
        ("2026-11-29T07:00:00.250+01:00", 1_795_932_000_250),
        ("2026-11-29T06:00:00.250", 1_795_932_000_250),  # no zone: UTC, as the SDK writes it
        ("", None),
        ("yesterday", None),
    ],
)
def test_a_routes_flip_time_in_milliseconds(at: str, ms: int | None) -> None:
    assert Route.from_json("orders", route_json(at=at)).at_ms == ms


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"clusters": []}, "non-empty list"),
        ({"clusters": ["kafka-a", "kafka-a"]}, "twice"),
        ({"active": "kafka-c"}, "'active'"),
        ({"epoch": -1}, "'epoch'"),
        ({"epoch": True}, "'epoch'"),
        ({"epoch": 1.5}, "'epoch'"),
        ({"reason": 7}, "'reason'"),
        ({"clusters": ["kafka-a", "bad name"]}, "invalid cluster name"),
    ],
)
def test_invalid_route_is_rejected(overrides: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Route.from_json("orders", route_json(**overrides))


def test_invalid_route_name() -> None:
    with pytest.raises(ValidationError, match="route name"):
        Route.from_json("../etc", route_json())


def test_check_route_needs_known_clusters_of_one_kind() -> None:
    kafka = ClusterSpec(name="kafka-a", kind="kafka", url="h:1")
    route = Route.from_json("orders", route_json())
    with pytest.raises(UnknownClusterError, match="kafka-b"):
        check_route(route, {"kafka-a": kafka})
    pulsar = ClusterSpec(name="kafka-b", kind="pulsar", url="pulsar://h:1")
    with pytest.raises(ValidationError, match="different kinds"):
        check_route(route, {"kafka-a": kafka, "kafka-b": pulsar})


def test_epochs_only_move_forward() -> None:
    current = Route.from_json("orders", route_json(epoch=5))
    check_route_update(None, current)
    check_route_update(current, Route.from_json("orders", route_json(epoch=6)))
    for stale in (5, 4):
        with pytest.raises(StaleEpochError, match=f"epoch {stale} is not greater than the current epoch 5"):
            check_route_update(current, Route.from_json("orders", route_json(epoch=stale)))


def test_link_defaults_are_mm2_defaults() -> None:
    link = Link.from_json("kafka-a", "kafka-b", "{}")
    assert (link.policy, link.separator, link.offset_syncs) == ("prefix", ".", "source")
    assert Link.from_json("kafka-a", "kafka-b", link.to_json()) == link
    with pytest.raises(ValidationError, match="policy"):
        Link.from_json("a", "b", '{"policy": "mirror"}')
    with pytest.raises(ValidationError, match="two different clusters"):
        Link.from_json("a", "a", "{}")


def test_epoch_floor_allows_higher_epochs_and_the_same_route_with_edited_audit_fields() -> None:
    floor = Route.from_json("orders", route_json(epoch=5, reason="by the CLI"))
    check_floor(Route.from_json("orders", route_json(epoch=6, active="kafka-b")), floor)
    check_floor(Route.from_json("orders", route_json(epoch=5, reason="edited by hand")), floor)
    check_floor(Route.from_json("orders", route_json(epoch=1)), None)
    with pytest.raises(StaleEpochError, match="epoch 4 is not greater than the last epoch 5"):
        check_floor(Route.from_json("orders", route_json(epoch=4)), floor)
    with pytest.raises(StaleEpochError, match="other contents"):
        check_floor(Route.from_json("orders", route_json(epoch=5, active="kafka-b")), floor)
