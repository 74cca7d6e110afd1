"""The Spark drill's routes: the feed (the system drill whose producer and topic it uses) and the
source's options follow the route; a route for anything else is refused before a drill starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotstandby.drill.runner import DrillOptions
from hotstandby.drill.spark import DEFAULT_ROUTE, SparkWorkload, source_options
from hotstandby.drill.systems import drill_system
from hotstandby.errors import ValidationError
from hotstandby.refcluster import RefCluster


def test_the_default_route_is_the_kafka_drills() -> None:
    workload = SparkWorkload("unit")
    assert (DEFAULT_ROUTE, workload.route, workload.feed_system, workload.feed.system) == (
        "orders", "orders", "kafka", "kafka"
    )  # fmt: skip
    assert workload.topic == "drill-unit" and workload.phase.startswith("route orders (kafka), ")
    assert source_options("kafka", workload.topic) == {"subscribe": "drill-unit", "maxOffsetsPerTrigger": "2000"}


def test_the_pulsar_route_is_fed_by_the_pulsar_drill_and_read_by_the_topics_full_name() -> None:
    workload = SparkWorkload("unit", "payments")
    assert (workload.route, workload.feed_system, workload.feed.system) == ("payments", "pulsar", "pulsar")
    assert workload.topic == "persistent://public/default/drill-unit"
    assert workload.phase.startswith("route payments (pulsar), ")
    assert source_options("pulsar", workload.topic) == {"topic": workload.topic}  # no maxOffsetsPerTrigger


@pytest.mark.parametrize(("kind", "route"), [("spark", "nowhere"), ("kafka", "orders"), ("pulsar", "payments")])
def test_a_route_the_drill_does_not_read_is_refused(kind: str, route: str, tmp_path: Path) -> None:
    rc = RefCluster(tmp_path)  # never started: the route is refused first
    with pytest.raises(ValidationError, match="route"):
        drill_system(kind, rc, DrillOptions(route=route))
    assert not rc.is_up()
