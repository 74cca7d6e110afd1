"""``message_listener=`` for the Pulsar ``Consumer`` and ``reader_listener=`` for the ``Reader``:
the SDK receives (so that the ledger filter, a reader's skipping and switches apply) and calls
the listener, on a thread of the consumer's (reader's) own, as pulsar-client calls it on its
listener threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.waits import SLICE_MS
from hotstandby.logs import Seldom, get_logger

__all__ = ["MessageListener"]

_LOGS = {"consumer": get_logger("hotstandby.pulsar.consumer"), "reader": get_logger("hotstandby.pulsar.reader")}


class MessageListener:
    """Hands each message ``receive`` returns to ``listener(owner, message)``, one at a time,
    until :meth:`stop` (or ``receive`` raises ``AlreadyClosed``); :meth:`pause` and
    :meth:`resume` as pulsar-client's ``pause_message_listener`` / ``resume_message_listener``.
    An exception the listener raises is logged (``consumer.listener_failed``, or
    ``reader.listener_failed`` for ``role="reader"``); a consumer's message stays
    unacknowledged."""

    def __init__(
        self,
        owner: Any,
        listener: Callable[[Any, pulsar.Message], None],
        receive: Callable[[int], pulsar.Message],
        *,
        role: str = "consumer",
    ) -> None:
        self._owner = owner
        self._listener = listener
        self._receive = receive
        self._event = f"{role}.listener_failed"
        self._resumed = threading.Event()
        self._resumed.set()
        self._stopped = threading.Event()
        self._seldom = Seldom(_LOGS[role])
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"hotstandby-{role}-listener")
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
                self._listener(self._owner, msg)
            except Exception as exc:  # the application's code: logged, the listener goes on
                self._seldom.warning(self._event, error=repr(exc))

    def pause(self) -> None:
        self._resumed.clear()

    def resume(self) -> None:
        self._resumed.set()

    def stop(self, timeout: float) -> None:
        """No more calls once this returns (within ``timeout``), unless called by the listener."""
        self._stopped.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
