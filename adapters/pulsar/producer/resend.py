"""A Pulsar producer's re-send after a switch, ahead of the application's new messages.

After a switch the SDK's re-send goes first, through a backlog handed to pulsar-client in order,
never more in flight than its queue takes (``capacity``); the application's messages queue
behind it and count against ``max_pending_messages`` as with pulsar-client (``limit``), the
replay window does not. While a switch prepares, new sends wait in the backlog too (*held*):
the window stops growing, and the switch either re-sends them (commit) or sends them to the
cluster in use (``release``, the attempt failed). All fields are guarded by the producer's lock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.producer.message import Message
from hotstandby.failover.outbox import Outbox

__all__ = ["Resend"]

_PUMP_WAIT_S = 0.5  # the re-send's wait for room: acknowledgements wake it, this bounds each wait


class Resend:
    """The backlog, and whether sends go through it (:attr:`active`)."""

    def __init__(
        self,
        lock: threading.RLock,
        outbox: Outbox[Any, Message],
        *,
        limit: int,
        block: bool,
        wait_s: float,
        capacity: int,
        current: Callable[[int], bool],
        send: Callable[[pulsar.Producer, int, Message], None],
    ) -> None:
        self._lock = lock
        self._outbox = outbox
        self._limit = limit  # the application's max_pending_messages (0: none)
        self._block = block  # block_if_queue_full
        self._wait_s = wait_s  # how long a blocked send waits for room
        self._capacity = capacity  # what pulsar's queue takes
        self._current = current  # current(generation): that connection is still the one in use
        self._send = send  # send(inner, generation, message), in order (the producer's _send_lock held)
        self.active = False  # sends go through the backlog
        self.held = False  # a switch prepares: sends wait in the backlog
        self._backlog: deque[Message] = deque()
        self._room = threading.Condition(lock)  # notified on acknowledgements while active

    def admitted(self) -> bool:
        """While active: room for one more message of the application (``_send_lock`` held)."""
        if self._limit <= 0:
            return True
        deadline = time.monotonic() + self._wait_s
        with self._lock:
            # Not while a switch holds the sends: no acknowledgement makes room before it
            # commits, which needs the _send_lock this caller holds.
            while self.active and not self.held and self._outbox.own_pending >= self._limit:
                left = deadline - time.monotonic()
                if not self._block or left <= 0:
                    return False
                self._room.wait(min(left, _PUMP_WAIT_S))
        return True

    def queue(self, message: Message) -> bool:
        """Put ``message`` behind the re-send; False when that ended meanwhile (send it now)."""
        with self._lock:
            if not self.active:
                return False
            self._backlog.append(message)
            self._room.notify_all()
            return True

    def acknowledged(self) -> None:
        """(Lock held.) An acknowledgement made room."""
        if self.active:
            self._room.notify_all()  # the re-send and blocked sends wait for room

    def hold(self) -> None:
        """(Lock held.) A switch prepares: new sends wait in the backlog."""
        if not self.active:
            self.active = self.held = True

    def start(self, replay: list[Message], inner: pulsar.Producer, generation: int) -> None:
        """(Lock held.) The switch commits: ``replay`` (with the held messages) goes first."""
        self.held = False
        self._backlog = deque(replay)
        self.active = bool(replay)
        if replay:
            pump = threading.Thread(target=self._pump, args=(inner, generation), daemon=True, name="hotstandby-resend")
            pump.start()

    def release(self) -> list[Message]:
        """(Lock held.) The switch was given up: the held messages, to send on the cluster in use."""
        if not self.held:
            return []
        self.held = self.active = False
        held, self._backlog = list(self._backlog), deque()
        self._room.notify_all()
        return held

    def _pump(self, inner: pulsar.Producer, generation: int) -> None:
        """Hand the backlog to ``inner`` in order, never more in flight than its queue takes;
        ends when all is handed over and the replayed messages are acknowledged again."""
        while True:
            with self._lock:
                while True:
                    if not self._current(generation):
                        return
                    backlog = self._backlog
                    if backlog:
                        room = self._capacity - (self._outbox.pending - len(backlog))
                        if room > 0:
                            batch = [backlog.popleft() for _ in range(min(room, len(backlog)))]
                            break
                    elif self._outbox.replaying <= 0:
                        # Everything is in pulsar's queue, and only the application's messages
                        # occupy it: sends go straight to it again.
                        self.active = False
                        self._room.notify_all()
                        return
                    self._room.wait(_PUMP_WAIT_S)
            for message in batch:
                self._send(inner, generation, message)
