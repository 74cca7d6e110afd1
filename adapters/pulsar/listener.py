"""``message_listener=`` for the Pulsar ``Consumer``: the SDK receives (so that the ledger
filter and switches apply) and calls the listener, on a thread of the consumer's own, as
pulsar-client calls it on its listener threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.waits import SLICE_MS
from hotstandby.logs import Seldom, get_logger

__all__ = ["MessageListener"]

log = get_logger("hotstandby.pulsar.consumer")


class MessageListener:
    """Hands each message ``receive`` returns to ``listener(consumer, message)``, one at a time,
    until :meth:`stop`; :meth:`pause` and :meth:`resume` as pulsar-client's
    ``pause_message_listener`` / ``resume_message_listener``. An exception the listener raises
    is logged (``consumer.listener_failed``); the message stays unacknowledged."""

    def __init__(
        self, consumer: Any, listener: Callable[[Any, pulsar.Message], None], receive: Callable[[int], pulsar.Message]
    ) -> None:
        self._consumer = consumer
        self._listener = listener
        self._receive = receive
        self._resumed = threading.Event()
        self._resumed.set()
        self._stopped = threading.Event()
        self._seldom = Seldom(log)
        self._thread = threading.Thread(target=self._run, daemon=True, name="hotstandby-listener")
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._resumed.wait(SLICE_MS / 1000):
                continue
            try:
                msg = self._receive(SLICE_MS)
            except pulsar.Timeout:
                continue
            except pulsar.AlreadyClosed:
                return
            try:
                self._listener(self._consumer, msg)
            except Exception as exc:  # the application's code: logged, the listener goes on
                self._seldom.warning("consumer.listener_failed", error=repr(exc))

    def pause(self) -> None:
        self._resumed.clear()

    def resume(self) -> None:
        self._resumed.set()

    def stop(self, timeout: float) -> None:
        """No more calls once this returns (within ``timeout``), unless called by the listener."""
        self._stopped.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
