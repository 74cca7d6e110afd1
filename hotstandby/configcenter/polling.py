"""Waiting for a condition with a deadline: the one poll loop of the core.

Where nothing notifies a change (another process's presence, a lock held elsewhere, etcd
coming back), the core asks again until a deadline, backing off from ``first`` to ``most``
seconds between asks. The clock is passed in, so the waits run on a fake clock in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from hotstandby.errors import ConfigCenterUnavailable

T = TypeVar("T")

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock", "patiently", "wait_until"]


class Clock(Protocol):
    """What the core's waits need of time."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The process's clock: :func:`time.monotonic` and :func:`time.sleep`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()


def wait_until(
    condition: Callable[[], bool],
    timeout: float,
    *,
    first: float = 0.02,
    most: float = 1.0,
    clock: Clock = SYSTEM_CLOCK,
) -> bool:
    """Call ``condition`` until it is true (True) or ``timeout`` s have passed (False); it is
    called at least once, and once more at the deadline. The waits in between double from
    ``first`` up to ``most`` seconds."""
    deadline = clock.monotonic() + timeout
    delay = first
    while True:
        if condition():
            return True
        left = deadline - clock.monotonic()
        if left <= 0:
            return False
        clock.sleep(min(delay, left))
        delay = min(delay * 2, most)


def patiently(call: Callable[[], T], timeout: float, *, clock: Clock = SYSTEM_CLOCK) -> T:
    """``call()``, tried again while the config center is unreachable
    (:class:`ConfigCenterUnavailable`) for up to ``timeout`` s; then the last such error."""
    results: list[T] = []
    errors: list[ConfigCenterUnavailable] = []

    def attempt() -> bool:
        try:
            results.append(call())
            return True
        except ConfigCenterUnavailable as exc:
            errors.append(exc)
            return False

    if wait_until(attempt, timeout, first=0.05, most=1.0, clock=clock):
        return results[0]
    raise errors[-1]
