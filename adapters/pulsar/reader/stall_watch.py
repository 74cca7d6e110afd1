"""A reader that hears nothing while messages are left is replaced, off the caller's thread.

pulsar-lite may drop a reader's connection and then refuse it the subscription back
(docs/refcluster.md): the reader then gets nothing more, although the topic goes on. A
:class:`StallWatch` notices a reader that has been quiet for a while and asks the broker, on a
thread of its own (the question is a broker round trip, which must not hold up a
``read_next`` with a short timeout), whether messages are left; if so it calls ``replace``,
which opens a reader after the last message read. On a healthy broker a quiet reader has
nothing left, and nothing is replaced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.message_ids import more_in_batch
from hotstandby.logs import get_logger

__all__ = ["StallWatch"]

log = get_logger("hotstandby.pulsar.reader")

QUIET_S = 10.0  # how long a reader may hear nothing before the broker is asked


class StallWatch:
    """Watches one reader at a time: ``heard(msg)`` after each message (one attribute store: it
    is on the read path), ``quiet`` after each empty read; ``replace(inner, last message id)`` is
    called (on the watch's thread) for a stalled ``inner``."""

    def __init__(
        self,
        topic: str,
        replace: Callable[[Any, pulsar.MessageId | None], None],
        *,
        quiet_s: float = QUIET_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._topic = topic
        self._replace = replace
        self._quiet_s = quiet_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: Any = None  # the last message read from the watched reader
        self._noted: Any = None  # the last message the quiet period was measured from
        self._quiet_since = clock()
        self._checking = False
        self.replaced = 0

    def watch(self) -> None:
        """A new reader (a switch, a seek): a quiet period starts, no message read from it yet."""
        with self._lock:
            self._last = self._noted = None
            self._quiet_since = self._clock()

    def heard(self, msg: Any) -> None:
        self._last = msg

    def quiet(self, inner: Any) -> None:
        """``inner`` gave nothing in a read: after ``quiet_s`` of that, check it once, in the background."""
        now, last = self._clock(), self._last
        if last is not self._noted:  # read something since the last empty read
            self._noted, self._quiet_since = last, now
            return
        if now - self._quiet_since < self._quiet_s:
            return
        with self._lock:
            if self._checking:
                return
            self._checking = True
            self._quiet_since = now  # the next check after another quiet period
        last_id = None if last is None else last.message_id()
        threading.Thread(target=self._check, args=(inner, last_id), daemon=True, name="hotstandby-reader-stall").start()

    def _check(self, inner: Any, last: pulsar.MessageId | None) -> None:
        try:
            left = (last is not None and more_in_batch(last)) or bool(inner.has_message_available())
            if left:
                log.warning("reader.stalled", topic=self._topic, quiet_s=self._quiet_s, after=str(last))
                self._replace(inner, last)
                self.replaced += 1
        except pulsar.PulsarException as exc:  # the broker does not answer: asked again later
            log.info("reader.stall_check_failed", topic=self._topic, error=str(exc))
        finally:
            with self._lock:
                self._checking = False
