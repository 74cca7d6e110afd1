"""``hotstandby.metrics``: the SDK's counters, gauges and histograms.

The values live in the process (no dependency): :func:`snapshot` reads them. The extra
``pip install 'hotstandby[metrics]'`` brings the exporters' libraries: :func:`register_prometheus`
exports them through a ``prometheus_client`` registry (its default one unless the application
passes another), :func:`register_opentelemetry` as OpenTelemetry instruments on a meter
provider (the global one unless the application passes another). Names, labels and meaning:
docs/observability.md.

    >>> from hotstandby import metrics
    >>> metrics.snapshot()["hotstandby_switches_total"].value(route="orders", phase="completed")
    0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hotstandby.metrics.instruments import REGISTRY
from hotstandby.metrics.registry import MetricFamily, Sample

if TYPE_CHECKING:
    from hotstandby.metrics.otel import OpenTelemetryExport

__all__ = ["REGISTRY", "MetricFamily", "Sample", "register_opentelemetry", "register_prometheus", "snapshot"]


def snapshot() -> dict[str, MetricFamily]:
    """Every SDK metric's current values, by name (``hotstandby_switches_total``, ...)."""
    return REGISTRY.snapshot()


def register_prometheus(registry: Any = None) -> Any:
    """Export the SDK's metrics through ``prometheus_client``: registers a collector on
    ``registry`` (default: ``prometheus_client.REGISTRY``) and returns it (unregister it with
    ``registry.unregister(collector)``). Raises
    :class:`~hotstandby.errors.MissingDependencyError` without ``prometheus-client``."""
    from hotstandby.metrics.prometheus import register

    return register(REGISTRY, registry)


def register_opentelemetry(meter_provider: Any = None) -> OpenTelemetryExport:
    """Export the SDK's metrics through OpenTelemetry: instruments on the meter ``hotstandby``
    of ``meter_provider`` (default: ``opentelemetry.metrics.get_meter_provider()``) — observable
    counters and gauges read at each collection, histograms fed from now on. Returns the export
    (``close()`` stops it). Raises :class:`~hotstandby.errors.MissingDependencyError` without
    ``opentelemetry-api``."""
    from hotstandby.metrics.otel import register

    return register(REGISTRY, meter_provider)
