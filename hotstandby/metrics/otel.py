"""Export to OpenTelemetry (``pip install 'hotstandby[metrics]'`` brings ``opentelemetry-api``).

Counters and gauges become observable instruments whose callbacks read the in-process values
at each collection, so they hold everything since the process started. OpenTelemetry has no
observable histogram: each histogram gets a synchronous one with the same bucket bounds, fed
every observation made after the registration.

Names are the Prometheus names less a counter's ``_total`` (OpenTelemetry's convention; its
Prometheus exporters add the suffix back); histograms in ``_seconds`` have the unit ``s``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hotstandby.errors import MissingDependencyError
from hotstandby.metrics.registry import Counter, Gauge, Histogram, Metric, Registry

__all__ = ["OpenTelemetryExport", "register"]

_METER = "hotstandby"


def _api() -> Any:
    try:
        import opentelemetry.metrics
    except ImportError as exc:
        raise MissingDependencyError(
            "exporting metrics to OpenTelemetry needs opentelemetry-api: pip install 'hotstandby[metrics]'"
        ) from exc
    return opentelemetry.metrics


def instrument_name(metric: Metric) -> str:
    """The OpenTelemetry name of an SDK metric (see the module doc)."""
    return metric.name.removesuffix("_total") if isinstance(metric, Counter) else metric.name


def _unit(metric: Metric) -> str:
    return "s" if metric.name.endswith("_seconds") else ""


class OpenTelemetryExport:
    """The instruments :func:`register` made on a meter; :meth:`close` stops them reporting
    (OpenTelemetry has no way to remove an instrument: a closed one reports nothing)."""

    def __init__(self, source: Registry, meter: Any) -> None:
        self._api = _api()
        self._closed = threading.Event()
        self._stops: list[Callable[[], None]] = []
        self.instruments: dict[str, Any] = {}
        for metric in source.metrics():
            self.instruments[instrument_name(metric)] = self._instrument(meter, metric)

    def _instrument(self, meter: Any, metric: Metric) -> Any:
        name, unit, help = instrument_name(metric), _unit(metric), metric.help
        if isinstance(metric, Histogram):
            histogram = meter.create_histogram(
                name, unit=unit, description=help, explicit_bucket_boundaries_advisory=list(metric.bounds)
            )

            def record(value: float, labels: Mapping[str, str]) -> None:
                histogram.record(value, attributes=dict(labels))

            self._stops.append(metric.listen(record))
            return histogram
        callbacks = [self._observe(metric)]
        if isinstance(metric, Counter):
            return meter.create_observable_counter(name, callbacks=callbacks, unit=unit, description=help)
        if isinstance(metric, Gauge):
            return meter.create_observable_gauge(name, callbacks=callbacks, unit=unit, description=help)
        raise TypeError(f"{metric.name}: no OpenTelemetry instrument for a {metric.kind}")

    def _observe(self, metric: Metric) -> Callable[[Any], Iterable[Any]]:
        observation = self._api.Observation

        def callback(options: Any) -> Iterable[Any]:
            if self._closed.is_set():
                return []
            return [observation(s.value, attributes=dict(s.labels)) for s in metric.collect().samples]

        return callback

    def close(self) -> None:
        """Stop reporting: callbacks observe nothing, histograms are fed no more."""
        self._closed.set()
        for stop in self._stops:
            stop()
        self._stops.clear()


def register(source: Registry, meter_provider: Any = None) -> OpenTelemetryExport:
    """Instruments for every metric of ``source`` on the meter ``hotstandby`` of
    ``meter_provider`` (default: OpenTelemetry's global one)."""
    api = _api()
    provider = meter_provider if meter_provider is not None else api.get_meter_provider()
    from hotstandby import __version__

    return OpenTelemetryExport(source, provider.get_meter(_METER, __version__))
