"""The switch gate: holds a client's reads and sends while a switch gives up one cluster for
another, so nothing is handed out or sent in between that the switch would not account for.

A client builds its gate on its own lock (the lock its read and send paths already take), so a
read checks the gate and fetches under one acquisition. The switch closes the gate after the
drain (reads and sends go on while the old cluster finishes) and opens it once the new cluster
is in use; a read or send that finds it closed waits — never longer than its own timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SwitchGate"]


class SwitchGate:
    def __init__(self, lock: threading.RLock | threading.Lock | None = None) -> None:
        self._cond = threading.Condition(lock if lock is not None else threading.RLock())
        #: True while a switch holds reads and sends. A plain attribute, as reads check it once
        #: per message; act on it with the lock held.
        self.closed = False

    @property
    def lock(self) -> threading.Condition:
        """The condition on the client's lock: ``with gate.lock:`` takes the client's lock."""
        return self._cond

    def close(self) -> None:
        with self._cond:
            self.closed = True

    def open(self) -> None:
        with self._cond:
            self.closed = False
            self._cond.notify_all()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Closed for the body, opened afterwards whatever happens in it."""
        self.close()
        try:
            yield
        finally:
            self.open()

    def wait_open(self, timeout: float | None) -> bool:
        """Wait until the gate is open, at most ``timeout`` s (None: no limit, for callers that
        wait in bounded slices themselves); True when it is open."""
        with self._cond:
            return self._cond.wait_for(lambda: not self.closed, timeout)

    def notify(self) -> None:
        """Wake the waiters (something they wait for besides the gate changed)."""
        with self._cond:
            self._cond.notify_all()
