"""Export to Prometheus: a ``prometheus_client`` collector that reads the in-process registry
each time Prometheus scrapes (``pip install 'hotstandby[metrics]'``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hotstandby.errors import MissingDependencyError
from hotstandby.metrics.registry import MetricFamily, Registry

__all__ = ["SdkCollector", "register"]


def _client() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
    except ImportError as exc:
        raise MissingDependencyError(
            "exporting metrics to Prometheus needs prometheus-client: pip install 'hotstandby[metrics]'"
        ) from exc
    return prometheus_client


class SdkCollector:
    """Turns each scrape into ``prometheus_client`` metric families (counters lose their
    ``_total`` suffix in the family name, as ``prometheus_client`` expects)."""

    def __init__(self, source: Registry) -> None:
        self._source = source
        self._core = _client().core

    def describe(self) -> list[Any]:
        return []  # the metrics are known at collect time only: no check at registration

    def collect(self) -> Iterator[Any]:
        for family in self._source.snapshot().values():
            yield self._family(family)

    def _family(self, family: MetricFamily) -> Any:
        core = self._core
        labels = list(family.labelnames)
        if family.kind == "counter":
            out = core.CounterMetricFamily(family.name.removesuffix("_total"), family.help, labels=labels)
            for s in family.samples:
                out.add_metric([s.labels[n] for n in labels], s.value)
        elif family.kind == "gauge":
            out = core.GaugeMetricFamily(family.name, family.help, labels=labels)
            for s in family.samples:
                out.add_metric([s.labels[n] for n in labels], s.value)
        else:
            out = core.HistogramMetricFamily(family.name, family.help, labels=labels)
            for s in family.samples:
                buckets = [("+Inf" if b == float("inf") else repr(b), n) for b, n in s.buckets]
                out.add_metric([s.labels[n] for n in labels], buckets, s.value)
        return out


def register(source: Registry, registry: Any = None) -> SdkCollector:
    """Register a collector of ``source`` on ``registry`` (default: prometheus_client's)."""
    client = _client()
    collector = SdkCollector(source)
    (registry if registry is not None else client.REGISTRY).register(collector)
    return collector
