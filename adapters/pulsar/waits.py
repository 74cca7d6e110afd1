"""How a Pulsar consumer or reader waits for a message: in short slices, so that a switch can
swap the pulsar-client object it waits on in between."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pulsar

__all__ = ["SLICE_MS", "as_pulsar_waits", "deadline_of", "slice_ms", "slices_ms"]

T = TypeVar("T")

SLICE_MS = 100  # the longest single wait


def slices_ms(timeout_millis: int | None) -> Iterator[int]:
    """Waits in milliseconds (1 to :data:`SLICE_MS`) adding up to ``timeout_millis`` (None or
    negative: no limit); the caller raises its timeout when they run out."""
    if timeout_millis is None or timeout_millis < 0:
        while True:
            yield SLICE_MS
    deadline = time.monotonic() + timeout_millis / 1000
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms < 0:
            return
        yield max(min(SLICE_MS, left_ms), 1)


def deadline_of(timeout_millis: int | None) -> float | None:
    """The monotonic deadline of ``timeout_millis`` (None or negative: none)."""
    return None if timeout_millis is None or timeout_millis < 0 else time.monotonic() + timeout_millis / 1000


def slice_ms(deadline: float | None) -> int:
    """The next wait (1 to :data:`SLICE_MS` ms) before ``deadline``; -1 once it passed. A plain
    call, for loops run once per message, where a generator costs more than the loop."""
    if deadline is None:
        return SLICE_MS
    left_ms = int((deadline - time.monotonic()) * 1000)
    return -1 if left_ms < 0 else max(min(SLICE_MS, left_ms), 1)


def as_pulsar_waits(wait: Callable[[], T], timeout_millis: object = None) -> T:
    """``wait()``, failing as pulsar-client's own waits do: ``ValueError`` for a timeout that is
    not an int, ``pulsar.Interrupted`` when a signal handler raises ``KeyboardInterrupt``
    (Ctrl-C) while it waits — between two slices, where pulsar-client is not waiting."""
    if timeout_millis is not None and not isinstance(timeout_millis, int):
        raise ValueError(
            f"Argument timeout_millis is expected to be of type 'int' and not '{type(timeout_millis).__name__}'"
        )
    try:
        return wait()
    except KeyboardInterrupt as exc:
        raise pulsar.Interrupted("Pulsar error: Interrupted") from exc
