"""Ctrl-C while librdkafka serves a Python callback inside ``flush()`` or ``poll()``.

Python runs the ``SIGINT`` handler in whatever Python code the main thread executes, which
inside ``flush()`` is a delivery callback or the ``logger`` that librdkafka's lines are
served to. confluent-kafka (2.16) can lose the ``KeyboardInterrupt`` raised there on its way
out: ``flush()`` then fails with ``SystemError`` ("returned NULL without setting an
exception"). The producer facade always has a delivery callback and a logger, so it notes an
interrupt either saw and raises it again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["CallbackInterrupts"]


class CallbackInterrupts:
    """Interrupts seen by callbacks served during one ``flush``/``poll`` of a raw client."""

    def __init__(self) -> None:
        self._taken = False

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Around a callback's body: notes a ``KeyboardInterrupt`` passing through."""
        try:
            yield
        except KeyboardInterrupt:
            self._taken = True
            raise

    def serve(self, serve: Callable[[float], int], wait: float) -> int:
        """``serve(wait)``; a ``SystemError`` after a callback was interrupted is the interrupt."""
        self._taken = False
        try:
            return int(serve(wait))
        except SystemError:
            if self._taken:
                raise KeyboardInterrupt from None
            raise

    def logging(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` with its ``logger`` watched too (librdkafka's lines are served by
        ``flush``/``poll``, as delivery callbacks are)."""
        logger = config.get("logger")
        return dict(config) if logger is None else {**config, "logger": _WatchedLogger(logger, self)}


class _WatchedLogger:
    """The ``logger`` confluent-kafka calls ``log(level, format, ...)`` on, watched."""

    def __init__(self, logger: Any, interrupts: CallbackInterrupts) -> None:
        self._logger = logger
        self._interrupts = interrupts

    def log(self, *args: Any, **kwargs: Any) -> None:
        with self._interrupts.watching():
            self._logger.log(*args, **kwargs)
