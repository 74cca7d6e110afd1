"""Coroutine callbacks of the asyncio Kafka facades, run on the event loop for a facade thread.

confluent-kafka's asyncio classes run a callback (``on_assign``, ``error_cb``, ...) on the
event loop and send the client calls it makes to other executor threads, which librdkafka's
handle admits through a per-call identity. The SDK's facades hold their own locks while they
call back (a poll holds the consumer's lock through a rebalance), so a call from the callback
on another thread would wait for the thread that waits for the callback. Here the thread that
called back waits *and serves*: every facade call the callback makes is run on that thread, as
it would be with the blocking facade, where a callback calls the consumer on its own thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import logging
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["LoopLogger", "call_back", "on_callers_thread", "wrap_conf_callbacks"]

_Task = Callable[[], None]
_INBOX: contextvars.ContextVar[_Inbox | None] = contextvars.ContextVar("hotstandby_aio_inbox", default=None)
_SERVE_SLICE_S = 0.05  # how often a waiting thread checks that the loop still runs


class _Inbox:
    """Facade calls a callback makes, queued for the thread that is waiting for the callback."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open = True

    def submit(self, task: _Task) -> bool:
        with self._lock:
            if self._open:
                self._tasks.put(task)
            return self._open

    def wake(self) -> None:
        self._tasks.put(None)

    def serve(self, done: concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop) -> None:
        """Run what is submitted until ``done``; a task submitted later goes to the executor."""
        while not done.done():
            if loop.is_closed():
                raise RuntimeError("the event loop was closed while a callback ran")
            try:
                task = self._tasks.get(timeout=_SERVE_SLICE_S)
            except queue.Empty:
                continue
            if task is not None:
                task()
        with self._lock:
            self._open = False
        while not self._tasks.empty():  # submitted before it closed
            task = self._tasks.get_nowait()
            if task is not None:
                task()


def call_back(loop: asyncio.AbstractEventLoop, callback: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run ``callback(*args)`` (a coroutine function, or a plain one) on ``loop`` from a facade
    thread; the facade calls it makes run on this thread (:func:`on_callers_thread`). Returns
    its result."""
    try:
        on_loop = asyncio.get_running_loop() is loop
    except RuntimeError:
        on_loop = False
    if on_loop:  # it would wait for itself
        raise RuntimeError("a callback of an asyncio facade was called on its event loop's thread")
    inbox = _Inbox()

    async def run() -> Any:
        _INBOX.set(inbox)  # this task's context: its awaits, and tasks it starts
        result = callback(*args)
        return await result if inspect.isawaitable(result) else result

    done = asyncio.run_coroutine_threadsafe(run(), loop)
    done.add_done_callback(lambda _: inbox.wake())
    inbox.serve(done, loop)
    return done.result()


async def on_callers_thread(
    executor: concurrent.futures.Executor | None, task: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """Run a blocking facade call: on the thread waiting for the callback this coroutine runs
    in, if any, else on ``executor``."""
    call = functools.partial(task, *args, **kwargs)
    inbox = _INBOX.get()
    if inbox is not None:
        result: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if result.set_running_or_notify_cancel():
                try:
                    result.set_result(call())
                except BaseException as exc:  # handed to the awaiting coroutine
                    result.set_exception(exc)

        if inbox.submit(run):
            return await asyncio.wrap_future(result)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


class LoopLogger:
    """A ``logger`` configuration value: librdkafka's log lines, logged on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, logger: logging.Logger) -> None:
        self.loop = loop
        self.logger = logger

    def log(self, *args: Any, **kwargs: Any) -> None:
        self.loop.call_soon_threadsafe(functools.partial(self.logger.log, *args, **kwargs))


def wrap_conf_callbacks(loop: asyncio.AbstractEventLoop, conf: dict[str, Any], names: tuple[str, ...]) -> None:
    """Replace the configuration's coroutine callbacks by functions the facade can call."""
    for name in names:
        if name in conf:
            conf[name] = functools.partial(call_back, loop, conf[name])
    if "logger" in conf:
        conf["logger"] = LoopLogger(loop, conf["logger"])
