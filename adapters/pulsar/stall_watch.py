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
    """Watches one reader at a time: ``heard`` after each message, ``quiet`` after each empty
    read; ``replace(inner, last)`` is called (on the watch's thread) for a stalled ``inner``."""

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
        self._heard_at = clock()
        self._last: pulsar.MessageId | None = None
        self._checking = False
        self.replaced = 0

    def watch(self, last: pulsar.MessageId | None) -> None:
        """A new reader, positioned after ``last`` (None: at its own start)."""
        with self._lock:
            self._heard_at, self._last = self._clock(), last

    def heard(self, mid: pulsar.MessageId) -> None:
        self._heard_at, self._last = self._clock(), mid  # plain stores: the hot path takes no lock

    def quiet(self, inner: Any) -> None:
        """``inner`` gave nothing in a read: after ``quiet_s`` of that, check it once, in the background."""
        if self._clock() - self._heard_at < self._quiet_s:
            return
        with self._lock:
            if self._checking:
                return
            self._checking = True
            self._heard_at = self._clock()  # the next check after another quiet period
            last = self._last
        threading.Thread(target=self._check, args=(inner, last), daemon=True, name="hotstandby-reader-stall").start()

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
