"""The OpenTelemetry export of the SDK's metrics, read through the OpenTelemetry SDK's
in-memory reader after a real switch (the in-memory adapter: the real core, no processes)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from hotstandby import metrics
from hotstandby.adapters.memory.producer import Producer
from hotstandby.adapters.memory.world import World
from hotstandby.errors import MissingDependencyError
from hotstandby.metrics.instruments import LEDGER_STORE_SECONDS, REGISTRY
from hotstandby.metrics.otel import instrument_name
from hotstandby.metrics.registry import DEFAULT_BUCKETS
from tests.support import two_memory_clusters

sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")
sdk_export = pytest.importorskip("opentelemetry.sdk.metrics.export")

ROUTE, TOPIC = "otel", "t"


@pytest.fixture
def reader() -> Iterator[Any]:
    reader = sdk_export.InMemoryMetricReader()
    provider = sdk_metrics.MeterProvider(metric_readers=[reader])
    export = metrics.register_opentelemetry(provider)
    yield reader
    export.close()
    provider.shutdown()


def points(reader: Any) -> dict[str, list[Any]]:
    """The data points of one collection, by instrument name."""
    out: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "hotstandby"
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def labelled(found: list[Any], **labels: str) -> list[Any]:
    return [p for p in found if all(p.attributes.get(k) == v for k, v in labels.items())]


@pytest.fixture
def world() -> Iterator[World]:
    with two_memory_clusters(ROUTE, TOPIC, 2) as w:
        yield w


def test_a_switch_reads_the_same_through_opentelemetry_as_in_the_process(reader: Any, world: World) -> None:
    producer = Producer({"hotstandby.route": ROUTE, "hotstandby.client.id": "p-otel",
                         "hotstandby.etcd.timeout.ms": 1000}, center=world.center)  # fmt: skip
    try:
        for i in range(5):
            producer.produce(TOPIC, value=f"v{i}", key=f"k{i}")
        assert producer.flush(10) == 0
        flipped = world.flip(ROUTE, "mem-b")
        assert producer.wait_for_route(flipped.epoch, 5.0)
        got, snapshot = points(reader), metrics.snapshot()
    finally:
        producer.close()

    [started] = labelled(got["hotstandby_switches"], route=ROUTE, role="producer", phase="started")
    [completed] = labelled(got["hotstandby_switches"], route=ROUTE, role="producer", phase="completed")
    assert (started.value, completed.value) == (1, 1)
    [resent] = labelled(got["hotstandby_resent_records"], route=ROUTE)
    assert resent.value == 5
    [cluster] = labelled(got["hotstandby_client_cluster"], client="p-otel")
    assert (cluster.attributes["cluster"], cluster.value) == ("mem-b", 1)
    [epoch] = labelled(got["hotstandby_client_epoch"], client="p-otel")
    assert epoch.value == flipped.epoch
    [duration] = labelled(got["hotstandby_switch_duration_seconds"], route=ROUTE)
    ours = snapshot["hotstandby_switch_duration_seconds"]
    assert duration.count == ours.count(route=ROUTE) == 1
    assert duration.sum == pytest.approx(ours.value(route=ROUTE))
    assert tuple(duration.explicit_bounds) == DEFAULT_BUCKETS

    # Every counter and gauge: the same label sets and values as the in-process snapshot.
    for metric in REGISTRY.metrics():
        family = snapshot[metric.name]
        if family.kind == "histogram":
            continue
        exported = {tuple(sorted(p.attributes.items())): p.value for p in got.get(instrument_name(metric), [])}
        assert exported == {tuple(sorted(s.labels.items())): s.value for s in family.samples}, metric.name


def test_histograms_are_fed_until_the_export_is_closed() -> None:
    reader = sdk_export.InMemoryMetricReader()
    provider = sdk_metrics.MeterProvider(metric_readers=[reader])
    export = metrics.register_opentelemetry(provider)
    try:
        LEDGER_STORE_SECONDS.observe(0.02, op="otel-test")
        LEDGER_STORE_SECONDS.observe(7.0, op="otel-test")
        [point] = labelled(points(reader)["hotstandby_ledger_store_seconds"], op="otel-test")
        assert (point.count, point.sum) == (2, pytest.approx(7.02))
        bounds = list(point.explicit_bounds)
        assert point.bucket_counts[bounds.index(0.025)] == 1 and point.bucket_counts[bounds.index(10.0)] == 1
        export.close()
        LEDGER_STORE_SECONDS.observe(0.02, op="otel-test")
        [after] = labelled(points(reader)["hotstandby_ledger_store_seconds"], op="otel-test")
        assert after.count == 2, "a closed export is fed no more"
        assert points(reader).get("hotstandby_switches", []) == [], "nor observed"
    finally:
        export.close()
        provider.shutdown()


def test_opentelemetry_export_without_opentelemetry_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "opentelemetry.metrics", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hotstandby\[metrics\]'"):
        metrics.register_opentelemetry()
