"""``Reader`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.Reader across switches.

A reader keeps no position on the broker, and a message id names a message on one cluster
only. The reader therefore remembers the identities of the messages it returned (in memory,
a ledger per partition); after a switch it reads the new cluster from the earliest message
and skips what it returned already — nothing is skipped that it did not return, nothing is
returned twice. Messages without an identity (not written by the SDK) are returned again.

A reader that hears nothing for a while although the broker has messages left is replaced by
one that starts after the last message read (:class:`~hotstandby.adapters.pulsar.reader.stall_watch.StallWatch`).

With ``reader_listener=``, the SDK reads (so the same holds) and calls
``listener(reader, message)`` on a thread of the reader's own
(:class:`~hotstandby.adapters.pulsar.listener.MessageListener`); ``read_next`` then raises
``InvalidConfiguration``, as in pulsar-client.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.adapters.pulsar.client.switch import close_quietly
from hotstandby.adapters.pulsar.consumer.handed import hand_out, stored_at
from hotstandby.adapters.pulsar.listener import MessageListener
from hotstandby.adapters.pulsar.reader.stall_watch import StallWatch
from hotstandby.adapters.pulsar.topics import full_topic
from hotstandby.adapters.pulsar.waits import as_pulsar_waits, slices_ms
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.ledger.ledger import PartitionLedger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Client

__all__ = ["Reader"]

_LISTENER_STOP_S = 5.0  # a listener call in progress when the reader closes: how long close waits


class Reader:
    """Drop-in replacement for :class:`pulsar.Reader` (see the module doc)."""

    def __init__(self, client: Client, topic: str, start_message_id: pulsar.MessageId, kwargs: dict[str, Any]) -> None:
        self._client = client
        self._topic = topic
        self._kwargs = dict(kwargs)
        listener = self._kwargs.pop("reader_listener", None)  # called by the SDK, not by pulsar-client
        self._lock = threading.RLock()
        self._gate = client.gate  # closed while the client switches (read under our lock)
        self._returned: dict[int, PartitionLedger] = {}  # identities returned, per partition
        self._closed = False
        self.skipped = 0
        self._start: pulsar.MessageId | None = start_message_id  # where the current reader began
        self._watch = StallWatch(topic, self._replace_stalled)
        self._inner = client.inner.create_reader(topic, start_message_id, **self._kwargs)
        self._listener = None if listener is None else MessageListener(self, listener, self._read_next, role="reader")

    def topic(self) -> str:
        """The topic's full name, as pulsar-client gives it."""
        return full_topic(self._topic)

    def read_next(self, timeout_millis: int | None = None) -> pulsar.Message:
        """As :meth:`pulsar.Reader.read_next`; raises ``pulsar.Timeout`` after ``timeout_millis``,
        ``pulsar.Interrupted`` when a signal handler raises (Ctrl-C) while it waits. A reader with
        a ``reader_listener`` refuses, as with pulsar-client (``InvalidConfiguration``)."""
        if self._listener is not None:
            raise pulsar.InvalidConfiguration("Pulsar error: InvalidConfiguration")
        return as_pulsar_waits(lambda: self._read_next(timeout_millis), timeout_millis)

    def _read_next(self, timeout_millis: int | None) -> pulsar.Message:
        for wait_ms in slices_ms(timeout_millis):
            with self._lock:
                if self._closed:
                    raise pulsar.AlreadyClosed("Reader has been closed")
                inner = None if self._gate.closed else self._inner
            if inner is None:
                self._gate.wait_open(wait_ms / 1000)  # not under our lock: the switch takes it
                continue
            try:
                msg = inner.read_next(wait_ms)
            except pulsar.Timeout:
                self._watch.quiet(inner)
                continue
            except pulsar.AlreadyClosed:
                continue
            with self._lock:
                # Read just before the gate closed: returned (and remembered, so the new
                # cluster's copy is skipped), whether the switch succeeds or fails.
                if inner is not self._inner:
                    continue  # from a cluster we left: read again on the new one
                self._watch.heard(msg)
                rid = identity_of(msg)
                if rid is not None:
                    returned = self._returned.setdefault(rid.partition, PartitionLedger())
                    if returned.has(rid):
                        self.skipped += 1
                        continue
                    returned.ack(rid, int(time.time() * 1000))
                return hand_out(msg, rid if rid is not None else stored_at(msg))
        raise pulsar.Timeout("no message within the timeout")

    def has_message_available(self) -> bool:
        return bool(self._inner.has_message_available())

    def seek(self, target: Any) -> None:
        """As :meth:`pulsar.Reader.seek` (a message id of the current cluster, or a publish time);
        what was returned before is returned again after a seek."""
        with self._lock:
            self._inner.seek(target)
            self._returned.clear()
            # After a seek to a publish time, no message id says where a replacement would begin.
            self._start = target if isinstance(target, pulsar.MessageId) else None
            self._watch.watch()

    def is_connected(self) -> bool:
        return bool(self._inner.is_connected())

    def abandon(self) -> None:
        """The client shuts down: closed at once."""
        with self._lock:
            self._closed = True
        if self._listener is not None:
            self._listener.stop(0)

    def close(self) -> None:
        """Closes; a reader listener is called no more once it returns (unless it is the
        listener that closes)."""
        if self._listener is not None:
            self._listener.stop(_LISTENER_STOP_S)
        with self._lock:
            self._closed = True
            inner = self._inner
        self._client.retire(self, inner)

    # -- switching (run by the client, its gate closed from store to commit) --------------------

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        new = client.create_reader(self._topic, pulsar.MessageId.earliest, **self._kwargs)

        def commit() -> None:
            with self._lock:
                self._inner = new
                self._start = pulsar.MessageId.earliest
                self._watch.watch()

        return commit

    def _replace_stalled(self, inner: pulsar.Reader, last: pulsar.MessageId | None) -> None:
        """Called by the stall watch: ``inner`` has messages left but hands out none."""
        with self._lock:
            if self._closed or inner is not self._inner or self._gate.closed:
                return
            client, start = self._client.inner, (last if last is not None else self._start)
        if start is None:
            return
        kwargs = self._kwargs if last is None else dict(self._kwargs, start_message_id_inclusive=False)
        new = client.create_reader(self._topic, start, **kwargs)
        with self._lock:
            current = not self._closed and inner is self._inner and not self._gate.closed
            if current:
                self._inner = new
        close_quietly(inner if current else new)
