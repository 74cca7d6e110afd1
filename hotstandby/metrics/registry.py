"""An in-process metrics registry: counters, gauges and histograms with labels.

No dependency: the values live here and are read with :meth:`Registry.snapshot`; an exporter
(:mod:`hotstandby.metrics.prometheus`) turns a snapshot into its own format. Updating a metric
takes the metric's lock for a dict lookup and an addition — instruments are updated on
switches, ledger stores and etcd reconnects, never once per record. A count that grows once
per record stays the client's own integer and is *followed* (:meth:`Counter.follow`): read
when a snapshot is taken, added to the counter for good when the client closes.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Counter", "Followed", "Gauge", "Histogram", "Metric", "MetricFamily", "Registry", "Sample"]

LabelValues = tuple[str, ...]
#: ``listener(value, labels)``: told of each observation of a histogram (see :meth:`Histogram.listen`).
Listener = Callable[[float, Mapping[str, str]], None]


@dataclass(frozen=True)
class Sample:
    """One labelled value. Histograms: ``value`` is the sum of the observations, ``count``
    their number, ``buckets`` the cumulative counts per upper bound (the last one ``inf``)."""

    labels: Mapping[str, str]
    value: float
    count: int | None = None
    buckets: tuple[tuple[float, int], ...] = ()


@dataclass(frozen=True)
class MetricFamily:
    """A metric as a snapshot shows it: name, kind (``counter``, ``gauge``, ``histogram``),
    help text, label names and one sample per label set."""

    name: str
    kind: str
    help: str
    labelnames: tuple[str, ...]
    samples: tuple[Sample, ...] = field(default=())

    def matching(self, **labels: str) -> list[Sample]:
        """The samples whose labels include ``labels``."""
        return [s for s in self.samples if all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, **labels: str) -> float:
        """The sum of the values of the samples whose labels include ``labels`` (0 if none)."""
        return sum(s.value for s in self.matching(**labels))

    def count(self, **labels: str) -> int:
        """Histograms: the number of observations of the matching samples."""
        return sum(s.count or 0 for s in self.matching(**labels))


class Metric:
    """What every metric has: name, help, label names, and :meth:`collect`."""

    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()

    def _key(self, labels: Mapping[str, str]) -> LabelValues:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name}: labels {sorted(labels)}, expected {sorted(self.labelnames)}")
        return tuple(str(labels[n]) for n in self.labelnames)

    def _labels(self, key: LabelValues) -> dict[str, str]:
        return dict(zip(self.labelnames, key, strict=True))

    def collect(self) -> MetricFamily:
        raise NotImplementedError


class Followed:
    """A client's own count followed by a :class:`Counter` (see :meth:`Counter.follow`)."""

    def __init__(self, counter: Counter, key: LabelValues, read: Callable[[], int]) -> None:
        self._counter = counter
        self._key = key
        self._read = read
        self.last = 0  # the last value read

    def read(self) -> int:
        with contextlib.suppress(Exception):  # a client half closed: its last value stands
            self.last = max(self.last, int(self._read()))
        return self.last

    def close(self) -> None:
        """The client is done: its final count stays in the counter."""
        self._counter._unfollow(self)


class Counter(Metric):
    """A value that only grows."""

    kind = "counter"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self._values: dict[LabelValues, float] = {}
        self._followed: list[Followed] = []

    def inc(self, amount: float = 1, **labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter does not decrease ({amount})")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def follow(self, read: Callable[[], int], **labels: str) -> Followed:
        """Count ``read()`` (a client's own, growing count) in this counter from now on; close
        the returned handle when the client closes."""
        followed = Followed(self, self._key(labels), read)
        with self._lock:
            self._values.setdefault(followed._key, 0)
            self._followed.append(followed)
        return followed

    def _unfollow(self, followed: Followed) -> None:
        final = followed.read()
        with self._lock:
            if followed in self._followed:
                self._followed.remove(followed)
                self._values[followed._key] = self._values.get(followed._key, 0) + final

    def collect(self) -> MetricFamily:
        with self._lock:
            values = dict(self._values)
            followed = list(self._followed)
        for f in followed:
            values[f._key] = values.get(f._key, 0) + f.read()
        samples = tuple(Sample(self._labels(k), v) for k, v in sorted(values.items()))
        return MetricFamily(self.name, self.kind, self.help, self.labelnames, samples)


class Gauge(Metric):
    """A value that is set."""

    kind = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help, labelnames)
        self._values: dict[LabelValues, float] = {}

    def set(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = value

    def add(self, amount: float, **labels: str) -> None:
        """Add ``amount`` (may be negative) to the value."""
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def remove(self, **labels: str) -> None:
        """Forget a label set (a client that closed)."""
        key = self._key(labels)
        with self._lock:
            self._values.pop(key, None)

    def remove_matching(self, **labels: str) -> None:
        """Forget every label set that includes ``labels``."""
        with self._lock:
            for key in [k for k in self._values if all(self._labels(k).get(n) == v for n, v in labels.items())]:
                del self._values[key]

    def collect(self) -> MetricFamily:
        with self._lock:
            values = dict(self._values)
        samples = tuple(Sample(self._labels(k), v) for k, v in sorted(values.items()))
        return MetricFamily(self.name, self.kind, self.help, self.labelnames, samples)


#: Upper bounds (seconds) of the default histogram buckets: from 5 ms to 2 minutes.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Histogram(Metric):
    """Observations counted in buckets, with their sum."""

    kind = "histogram"

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:  # fmt: skip
        super().__init__(name, help, labelnames)
        self.bounds = tuple(sorted(buckets))
        self._values: dict[LabelValues, tuple[list[int], list[float]]] = {}  # per bucket counts, [sum]
        self._listeners: tuple[Listener, ...] = ()

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        index = bisect.bisect_left(self.bounds, value)  # the first bound >= value; len(bounds): +Inf
        with self._lock:
            counts, total = self._values.setdefault(key, ([0] * (len(self.bounds) + 1), [0.0]))
            counts[index] += 1
            total[0] += value
            listeners = self._listeners
        for listener in listeners:  # outside the lock: an exporter's code never holds it
            listener(value, labels)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Tell ``listener`` of every observation from now on (an exporter whose histograms are
        fed value by value, as OpenTelemetry's); returns the function that stops it."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def stop() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

        return stop

    def collect(self) -> MetricFamily:
        with self._lock:
            values = {k: (list(c), t[0]) for k, (c, t) in self._values.items()}
        samples = []
        for key, (counts, total) in sorted(values.items()):
            cumulative, buckets = 0, []
            for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
                cumulative += n
                buckets.append((bound, cumulative))
            samples.append(Sample(self._labels(key), total, cumulative, tuple(buckets)))
        return MetricFamily(self.name, self.kind, self.help, self.labelnames, tuple(samples))


class Registry:
    """Named metrics; each name is registered once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[str, Metric] = {}

    def _add(self, metric: Metric) -> None:
        with self._lock:
            if metric.name in self._metrics:
                raise ValueError(f"metric {metric.name!r} is registered already")
            self._metrics[metric.name] = metric

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        metric = Counter(name, help, labelnames)
        self._add(metric)
        return metric

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        metric = Gauge(name, help, labelnames)
        self._add(metric)
        return metric

    def histogram(self, name: str, help: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS) -> Histogram:  # fmt: skip
        metric = Histogram(name, help, labelnames, buckets)
        self._add(metric)
        return metric

    def metrics(self) -> list[Metric]:
        """Every metric, in the order they were registered."""
        with self._lock:
            return list(self._metrics.values())

    def snapshot(self) -> dict[str, MetricFamily]:
        """Every metric's current values, by name."""
        with self._lock:
            metrics = list(self._metrics.values())
        return {m.name: m.collect() for m in metrics}
