"""The switch orchestrator: moves one client between clusters when its route flips.

A state machine per client — ``ACTIVE`` -> ``DRAINING`` -> ``SWITCHING`` -> ``ACTIVE`` — run
on its own thread so the route watcher is never blocked:

* one switch at a time; epochs that arrive meanwhile wait, and only the newest waiting one is
  carried out (moving through an intermediate cluster would be pointless);
* before each attempt the target cluster is asked whether it answers (``answers``): while it
  does not, ``perform`` is not called — the client stays ACTIVE on the cluster it has,
  consumers keep delivering and producers keep producing there — and the check is repeated
  with backoff (at most ``max_backoff`` apart, each one logged as
  ``switch.target_unreachable``), so the client moves soon after the target answers;
* a switch that fails is retried with exponential backoff, unless a newer epoch arrived; the
  client keeps the cluster it has until a switch completes — the ``perform`` callback must
  build the new connection before giving up the old one;
* every switch is logged (``switch.started``, ``switch.completed``, ``switch.failed``) and
  timed, and reported at the same points as a
  :class:`~hotstandby.failover.switch_events.SwitchEvent` to ``on_event`` (called on the
  switcher's thread, holding no lock).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import tenacity

from hotstandby.configcenter import RouteChange
from hotstandby.configcenter.documents import Route
from hotstandby.failover.switch_events import SwitchEvent, SwitchPhase
from hotstandby.logs import get_logger

__all__ = ["SwitchRecord", "SwitchState", "Switcher"]

log = get_logger("hotstandby.switch")


class SwitchState(enum.Enum):
    ACTIVE = "active"
    DRAINING = "draining"
    SWITCHING = "switching"


@dataclass(frozen=True)
class SwitchRecord:
    """One completed switch."""

    from_cluster: str
    to_cluster: str
    epoch: int
    duration_s: float
    attempts: int
    completed_at: float = field(default_factory=time.time)


#: ``perform(current, target, set_state)`` carries the switch out; it raises to fail it.
Perform = Callable[[Route, Route, Callable[[SwitchState], None]], None]
#: ``answers(target)``: None when the target's cluster answers, else why not (it may raise).
Answers = Callable[[Route], "str | None"]


class Switcher:
    def __init__(
        self,
        name: str,
        route: Route,
        perform: Perform,
        *,
        answers: Answers | None = None,
        max_backoff: float = 5.0,
        poll_s: float = 0.2,
        on_event: Callable[[SwitchEvent], None] | None = None,
    ) -> None:
        self.name = name
        self._on_event = on_event
        self._route = route
        self._perform = perform
        self._answers = answers
        self._max_backoff = max_backoff
        self._poll_s = poll_s
        self._state = SwitchState.ACTIVE
        self._lock = threading.Condition()
        self._pending: Route | None = None
        self._busy = False  # a target was taken and is being carried out
        self._problem: str | None = None  # why the switch under way has not completed yet
        self._stopped = threading.Event()
        self.history: list[SwitchRecord] = []
        self.failures = 0
        self.unreachable = 0  # checks that found the target not answering
        self._listeners: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._run, name=f"hotstandby-switch-{name}", daemon=True)
        self._thread.start()

    @property
    def route(self) -> Route:
        """The route the client currently runs on (changes only when a switch completes)."""
        with self._lock:
            return self._route

    @property
    def state(self) -> SwitchState:
        with self._lock:
            return self._state

    @property
    def problem(self) -> str | None:
        """Why the switch under way has not completed (its target does not answer, its last
        attempt failed), for the client's presence; None when there is none."""
        with self._lock:
            return self._problem

    def _announce(self, problem: str | None) -> None:
        """Keep ``problem`` and tell the listeners when it changed (once, not per retry)."""
        with self._lock:
            changed, self._problem = problem != self._problem, problem
        if changed:
            self._changed()

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the switcher's thread) after each change of state or route."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in self._listeners:
            try:
                callback()
            except Exception as exc:  # a listener must not break switching
                log.warning("switch.listener_failed", client=self.name, error=repr(exc))

    def _report(
        self, phase: SwitchPhase, current: Route, target: Route, attempt: int, *,
        duration_s: float | None = None, error: str | None = None,
    ) -> None:  # fmt: skip
        if self._on_event is None:
            return
        event = SwitchEvent(phase=phase, route=target.name, client_id=self.name, role="", from_cluster=current.active,
                            to_cluster=target.active, from_epoch=current.epoch, to_epoch=target.epoch,
                            attempt=attempt, duration_s=duration_s, error=error)  # fmt: skip
        try:
            self._on_event(event)
        except Exception as exc:  # reporting must not break switching
            log.warning("switch.report_failed", client=self.name, phase=phase.value, error=repr(exc))

    def _set_state(self, state: SwitchState) -> None:
        with self._lock:
            self._state = state
            self._lock.notify_all()
        self._changed()

    def offer(self, change: RouteChange) -> None:
        """A route change from the watcher; returns at once."""
        route = change.route
        with self._lock:
            newest = self._pending or self._route
            if route.name != self._route.name or route.epoch <= newest.epoch:
                return
            self._pending = route
            self._lock.notify_all()
        log.info("switch.queued", client=self.name, route=route.name, to=route.active, epoch=route.epoch)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no switch is running or waiting (for tests and orderly shutdown)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def close(self, timeout: float = 10.0) -> None:
        self._stopped.set()
        with self._lock:
            self._lock.notify_all()
        self._thread.join(timeout)

    # -- the worker -----------------------------------------------------------------------

    def _next(self) -> Route | None:
        with self._lock:
            while self._pending is None and not self._stopped.is_set():
                self._lock.wait(self._poll_s)
            target, self._pending = self._pending, None
            self._busy = target is not None
            return target

    def _run(self) -> None:
        while not self._stopped.is_set():
            target = self._next()
            if target is None:
                continue
            try:
                if target.active == self.route.active:
                    with self._lock:
                        self._route = target  # same cluster, newer epoch: nothing to move
                        self._problem = None
                    self._changed()
                else:
                    self._switch(target)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _switch(self, target: Route) -> None:
        current = self.route
        started = time.monotonic()
        attempts = 0
        wait = tenacity.wait_exponential_jitter(multiplier=0.1, max=self._max_backoff, jitter=0.1)
        log.info(
            "switch.started",
            client=self.name,
            route=target.name,
            source=current.active,
            to=target.active,
            epoch=target.epoch,
        )
        self._report(SwitchPhase.STARTED, current, target, 0)
        checks = failed = 0  # this switch's checks that found the target down, and failures
        while not self._stopped.is_set():
            try:
                why = self._answers(target) if self._answers is not None else None
                if why is not None:
                    # Not an attempt: the old cluster keeps serving, nothing was given up.
                    checks += 1
                    self.unreachable += 1
                    delay = wait(_attempt(checks))
                    log.warning("switch.target_unreachable", client=self.name, to=target.active,
                                epoch=target.epoch, check=checks, detail=why, retry_in_s=round(delay, 2))  # fmt: skip
                    self._announce(f"{target.active} (epoch {target.epoch}) does not answer: {why}")
                    if self._superseded(delay):
                        self._announce(None)
                        return
                    continue
                attempts += 1
                self._perform(current, target, self._set_state)
            except Exception as exc:  # the perform callback decides what is an error; we retry all
                failed += 1
                self.failures += 1
                with self._lock:
                    self._problem = (
                        f"switch to {target.active} (epoch {target.epoch}), attempt {attempts}, failed: {exc!r}"
                    )
                self._set_state(SwitchState.ACTIVE)
                delay = wait(_attempt(failed))
                log.warning("switch.failed", client=self.name, to=target.active, epoch=target.epoch,
                            attempt=attempts, error=repr(exc), retry_in_s=round(delay, 2))  # fmt: skip
                self._report(SwitchPhase.FAILED, current, target, attempts, error=repr(exc),
                             duration_s=time.monotonic() - started)  # fmt: skip
                if self._superseded(delay):
                    self._announce(None)
                    return
                continue
            duration = time.monotonic() - started
            with self._lock:
                self._route = target
                self._state = SwitchState.ACTIVE
                self._problem = None
                self.history.append(SwitchRecord(current.active, target.active, target.epoch, duration, attempts))
                self._lock.notify_all()
            self._changed()
            log.info("switch.completed", client=self.name, source=current.active, to=target.active,
                     epoch=target.epoch, duration_ms=round(duration * 1000, 1), attempts=attempts)  # fmt: skip
            self._report(SwitchPhase.COMPLETED, current, target, attempts, duration_s=duration)
            return

    def _superseded(self, delay: float) -> bool:
        """Wait ``delay`` s before the next try; True when a newer epoch arrived meanwhile."""
        with self._lock:
            if self._pending is None:
                self._lock.wait(delay)
            return self._pending is not None


def _attempt(number: int) -> tenacity.RetryCallState:
    state = tenacity.RetryCallState(retry_object=tenacity.Retrying(), fn=None, args=(), kwargs={})
    state.attempt_number = number
    return state
