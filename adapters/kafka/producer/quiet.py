"""Records produced without a delivery callback, acknowledged by the reports of a few of them.

A delivery report costs a Python call and a ``Message`` per record. A record the application
gave no callback needs none of its own when the raw producer keeps each partition in order
and turns every gap into a fatal error: idempotence on, ``enable.gapless.guarantee`` on, and
no message timeout (a record that times out is a gap the guarantee does not cover; such a
record is kept and sent until it is delivered, a switch re-sends it, or the producer closes).
A success for one record of a partition then means that every earlier record of that
partition was stored before it. So only a *marker* — every ``every``-th record of a
partition's run, or the first one ``interval_s`` after the last marker — carries a report,
and its success acknowledges its run up to it.

Their offsets are not known one by one: each lies after the previous marker's offset and at
or before this marker's (:class:`~hotstandby.failover.outbox.Stored` with a ``span``).
Replication trims them once its position passed the marker; a cluster holds them when its log
covers the whole span. When the raw producer holds nothing (every report served, nothing
fatal), the rest of every run was stored too, at offsets unknown: those records enter the
window without a place, and a switch re-sends them unless the new cluster's consumers filter
them as twins.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.state import Record
from hotstandby.logs import get_logger

__all__ = ["QUIET_SETTINGS", "QuietConnection", "QuietRuns", "is_fatal", "quiet_allowed"]

log = get_logger("hotstandby.kafka.producer")

#: What the raw producer of a quiet producer runs with (see the module doc).
QUIET_SETTINGS: Mapping[str, Any] = {
    "enable.idempotence": True,
    "enable.gapless.guarantee": True,
    "message.timeout.ms": 0,
}

_EVERY = 256  # records of a partition acknowledged by one report, at most
_INTERVAL_S = 0.05  # a marker at least this often per partition: a slow partition reports each record


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` is librdkafka's fatal error: flagged fatal, or ``_FATAL`` (what a call on
    a producer that had one raises)."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(err, KafkaError) and (err.fatal() or err.code() == KafkaError._FATAL)


def quiet_allowed(raw_config: Mapping[str, Any], has_default_callback: bool) -> bool:
    """Whether a producer can acknowledge records without a report each: no default delivery
    callback, no transactions (a transaction's records are tracked one by one), and neither
    idempotence nor the gapless guarantee turned off by the application."""
    if has_default_callback or "transactional.id" in raw_config:
        return False
    return all(str(raw_config.get(name, True)).lower() not in ("false", "0") for name in
               ("enable.idempotence", "enable.gapless.guarantee"))  # fmt: skip


@dataclass(slots=True)
class _Run:
    records: deque[Record] = field(default_factory=deque)
    since_marker: int = 0  # records since the last marker
    marked_at: float = 0.0  # when the last marker was sent
    low: int = 0  # the lowest offset the run's next records can have: after the last marker's


class QuietRuns:
    """Per partition, the records sent without a report since the last acknowledged marker."""

    def __init__(self, *, every: int = _EVERY, interval_s: float = _INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._every = every
        self._interval_s = interval_s
        self._clock = clock
        self._runs: dict[tuple[str, int], _Run] = {}
        self.waiting = 0  # records in the runs

    def marker(self, slot: tuple[str, int]) -> bool:
        """Whether the next record of ``slot`` must carry a report."""
        run = self._runs.get(slot)
        return run is None or run.since_marker + 1 >= self._every or self._clock() - run.marked_at >= self._interval_s

    def add(self, record: Record, marker: bool) -> None:
        """``record`` was handed to the raw producer (with a report when ``marker``)."""
        slot = (record.topic, record.partition)
        run = self._runs.get(slot)
        if run is None:
            run = self._runs[slot] = _Run()
        run.records.append(record)
        self.waiting += 1
        if marker:
            run.since_marker = 0
            run.marked_at = self._clock()
        else:
            run.since_marker += 1

    def through(self, marker: Record, offset: int) -> tuple[list[Record], int]:
        """The marker was stored at ``offset``: its run's records up to it, and the lowest
        offset they can have. Records of an older run (a switch cleared it) are not there."""
        run = self._runs.get((marker.topic, marker.partition))
        if run is None:
            return [], offset
        records = run.records
        sequence = marker.sequence
        out = []
        while records and records[0].sequence <= sequence:
            out.append(records.popleft())
        self.waiting -= len(out)
        low, run.low = run.low, offset + 1
        return out, min(low, offset)

    def rest(self) -> list[Record]:
        """Every record of every run, the runs emptied (each was stored, or is given up)."""
        out = [record for run in self._runs.values() for record in run.records]
        for run in self._runs.values():
            run.records.clear()
        self.waiting = 0
        return out

    def clear(self) -> None:
        """Forget the runs: a switch re-sends their records (with a report each), on a new
        connection whose offsets start no run."""
        self._runs.clear()
        self.waiting = 0


class _Fatal:
    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: str | None = None


class QuietConnection(RawProducer):
    """A raw producer with :data:`QUIET_SETTINGS` that notes its fatal error (seen through
    ``error_cb``, the application's own still called): a connection that had one settles
    nothing, its records stay pending until a switch sends them again."""

    def __init__(self, config: dict[str, Any]) -> None:
        fatal = _Fatal()  # not self: the callback must not keep the producer alive
        app_error_cb = config.get("error_cb")

        def on_error(err: KafkaError) -> None:
            if (err.fatal() or err.code() == KafkaError._FATAL) and fatal.error is None:
                fatal.error = err.str()
                log.error("producer.fatal", error=err.str(), note="records without a report are sent again")
            if app_error_cb is not None:
                app_error_cb(err)

        super().__init__({**config, **QUIET_SETTINGS, "error_cb": on_error})
        self._fatal = fatal

    @property
    def fatal(self) -> str | None:
        """The fatal error this connection had, if any."""
        return self._fatal.error

    # confluent-kafka raises a fatal error once, from whichever of these serves it first (no
    # error_cb): each notes it, so that nothing settles records that connection may have lost.
    # (produce() is not wrapped: it runs per record, and the producer's own produce notes it.)

    def poll(self, timeout: float = -1) -> int:
        return int(self._noting(super().poll, timeout))

    def flush(self, timeout: float = -1) -> int:
        return int(self._noting(super().flush, timeout))

    def _noting(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except KafkaException as exc:
            self._note(exc)
            raise

    def _note(self, exc: KafkaException) -> None:
        if is_fatal(exc) and self._fatal.error is None:
            self._fatal.error = str(exc.args[0].str())
            log.error("producer.fatal", error=self._fatal.error, note="records without a report are sent again")
