"""Switch events: what the application's ``hotstandby.on_switch`` callback receives, and the
metrics each event updates.

Every client (Kafka ``Producer`` and ``Consumer``, Pulsar ``Client``, memory clients, the
Spark reader) reports its switches through one :class:`SwitchEvents` made by its route
follower — the switcher emits ``started``, ``completed`` and ``failed`` where it logs
``switch.started``, ``switch.completed`` and ``switch.failed``; the follower emits
``rejected`` where it logs ``route.rejected``.

The callback runs on a thread of its own per client (``hotstandby-events-<client id>``),
started at the first event: never on the application's threads, never while the SDK holds a
lock the application could need, and never holding up a switch or the route watcher. Events
of a client arrive in order. A callback that raises is logged (``switch.callback_failed``,
once per phase and exception type) and counted; the next event is delivered as usual. On
close the events not delivered yet are delivered (for up to a few seconds), then the thread
ends.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from hotstandby.logs import get_logger
from hotstandby.metrics.instruments import CALLBACK_ERRORS, RESENT, SWITCH_DURATION, SWITCHES

__all__ = ["ClientCounts", "OnSwitch", "SwitchEvent", "SwitchEvents", "SwitchPhase"]

log = get_logger("hotstandby.switch")

_CLOSE_TIMEOUT_S = 5.0  # close(): how long events not delivered yet may still take


class SwitchPhase(str, enum.Enum):
    """Where a switch is: ``started`` (the client begins to move), ``completed`` (it uses the
    new cluster), ``failed`` (one attempt failed; the client stays where it is and tries
    again), ``rejected`` (the route names a cluster ``hotstandby.clusters.allowed`` excludes:
    the client does not move)."""

    STARTED = "started"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"


@dataclass(frozen=True, kw_only=True)
class SwitchEvent:
    """One step of a client's switch between clusters, as ``hotstandby.on_switch`` gets it.

    ``duration_s``: for ``completed`` the switch's duration (from ``started``, retries
    included), for ``failed`` the time since ``started``, else None. ``resent``: for
    ``completed``, the records a producer sent again to the new cluster in this switch (0 for
    consumers). ``filtered``: the records the client's consumers did not hand out so far
    (acknowledged before, or handed out already) — a running total, 0 for producers.
    ``error``: why an attempt failed (``failed``) or the switch was refused (``rejected``)."""

    phase: SwitchPhase
    route: str
    client_id: str
    role: str
    from_cluster: str
    to_cluster: str
    from_epoch: int
    to_epoch: int
    attempt: int = 0
    duration_s: float | None = None
    resent: int = 0
    filtered: int = 0
    error: str | None = None
    at: float = field(default_factory=time.time)  # wall-clock time of the event


#: The application's callback.
OnSwitch = Callable[[SwitchEvent], object]


@dataclass(frozen=True)
class ClientCounts:
    """A client's running totals (what it tracks; 0 where it tracks nothing)."""

    resent: int = 0
    filtered: int = 0


class SwitchEvents:
    """One client's switch events: fills in role and counts, updates the metrics, hands the
    event to the callback's thread (see the module docs). ``counts``: the client's totals."""

    def __init__(
        self, client_id: str, role: str, on_switch: OnSwitch | None, counts: Callable[[], ClientCounts] | None = None
    ) -> None:
        self.client_id = client_id
        self.role = role
        self._on_switch = on_switch
        self.counts: Callable[[], ClientCounts] = counts or ClientCounts
        self._resent_at_start = 0
        self._queue: deque[SwitchEvent] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._logged: set[tuple[SwitchPhase, str]] = set()
        self.callback_errors = 0
        self.delivered = 0

    def _counts(self) -> ClientCounts:
        try:
            return self.counts()
        except Exception:  # a client half built or half closed: no counts
            return ClientCounts()

    def emit(self, event: SwitchEvent) -> None:
        """Complete ``event`` (role, counts), count it, queue it for the callback. Never raises."""
        counts = self._counts()
        resent = 0
        if event.phase is SwitchPhase.STARTED:
            self._resent_at_start = counts.resent
        elif event.phase is SwitchPhase.COMPLETED:
            resent = max(0, counts.resent - self._resent_at_start)
        event = replace(event, role=self.role, resent=resent, filtered=counts.filtered)
        SWITCHES.inc(route=event.route, role=self.role, phase=event.phase.value)
        if event.phase is SwitchPhase.COMPLETED:
            if event.duration_s is not None:
                SWITCH_DURATION.observe(event.duration_s, route=event.route, role=self.role)
            if resent:
                RESENT.inc(resent, route=event.route, role=self.role)
        if self._on_switch is None:
            return
        with self._cond:
            if self._closed:
                return
            self._queue.append(event)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"hotstandby-events-{self.client_id}", daemon=True)  # fmt: skip
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed, timeout=1.0)
                if not self._queue:
                    if self._closed:
                        return
                    continue
                event = self._queue.popleft()
            self._deliver(event)
            with self._cond:
                self.delivered += 1
                self._cond.notify_all()

    def _deliver(self, event: SwitchEvent) -> None:
        assert self._on_switch is not None
        try:
            self._on_switch(event)
        except Exception as exc:  # the application's code: it must never break switching
            self.callback_errors += 1
            CALLBACK_ERRORS.inc(route=event.route, role=self.role)
            kind = (event.phase, type(exc).__name__)
            if kind not in self._logged:
                self._logged.add(kind)
                log.error("switch.callback_failed", client=self.client_id, route=event.route, phase=event.phase.value,
                          error=repr(exc), note="logged once per phase and exception type")  # fmt: skip

    def wait_delivered(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` events were delivered (tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.delivered >= count, timeout)

    def close(self, timeout: float = _CLOSE_TIMEOUT_S) -> None:
        """Deliver what is queued (for up to ``timeout`` s), then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("switch.callback_slow", client=self.client_id, undelivered=len(self._queue),
                            timeout_s=timeout)  # fmt: skip
