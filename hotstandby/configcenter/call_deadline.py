"""A deadline for the config center calls a thread makes, set by the caller that owns the time.

A synchronous commit may wait ``hotstandby.etcd.timeout.ms`` for its ledgers; under it, the
store makes several calls (a read, a transaction), each bounded on its own and a read tried
again within the store's own timeout. :func:`calls_until` caps all of them at the caller's
deadline, so the commit ends within its timeout and not one call later.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["call_deadline", "calls_until"]

_local = threading.local()


@contextlib.contextmanager
def calls_until(deadline: float | None) -> Iterator[None]:
    """Within the block, this thread's config center calls end by ``deadline`` (monotonic
    seconds; None: no cap), or by an earlier deadline already set."""
    previous: float | None = getattr(_local, "at", None)
    _local.at = deadline if previous is None else previous if deadline is None else min(previous, deadline)
    try:
        yield
    finally:
        _local.at = previous


def call_deadline() -> float | None:
    """The deadline of this thread's config center calls (None: none set)."""
    at: float | None = getattr(_local, "at", None)
    return at
