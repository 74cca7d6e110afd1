"""``hotstandby.metrics``: the SDK's counters, gauges and histograms.

The values live in the process (no dependency): :func:`snapshot` reads them. With
``prometheus-client`` installed (``pip install 'hotstandby[metrics]'``),
:func:`register_prometheus` exports them through a registry of its own (its default one
unless the application passes another). Names, labels and meaning: docs/observability.md.

    >>> from hotstandby import metrics
    >>> metrics.snapshot()["hotstandby_switches_total"].value(route="orders", phase="completed")
    0
"""

from __future__ import annotations

from typing import Any

from hotstandby.metrics.instruments import REGISTRY
from hotstandby.metrics.registry import MetricFamily, Sample

__all__ = ["REGISTRY", "MetricFamily", "Sample", "register_prometheus", "snapshot"]


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
