"""pulsar-client's blocking calls that create producers, consumers and readers, with the
error's message kept.

pulsar-client's blocking ``create_producer``, ``subscribe`` and ``create_reader`` raise the
result alone ("Pulsar error: AuthenticationError"); what went wrong (a token supplier's
exception, the broker's reason) is only in its log. Its asynchronous ``*_async_v2`` calls carry
the message, and :mod:`pulsar.asyncio` raises it. :class:`MessagedCalls` stands in for the raw
client's ``_pulsar.Client`` and runs those calls through the ``_v2`` ones, waiting for them as
the blocking calls do: the same exception classes, their text extended by the message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import _pulsar
import pulsar

_MESSAGE = "_hotstandby_message"  # the attribute that carries the message on a raised exception
_OPERATION_TIMEOUT_S = 30.0  # pulsar-client's default operation_timeout_seconds
_LATE_MARGIN_S = 10.0  # past the operation timeout, the call has failed to answer at all


def message_of(exc: BaseException) -> str | None:
    """The message a :class:`MessagedCalls` call failed with, if any."""
    message = getattr(exc, _MESSAGE, None)
    return message if isinstance(message, str) else None


def _raised(error: Any) -> BaseException:
    result: pulsar.Result = error.error
    cls = getattr(_pulsar, result.name, None)
    if not (isinstance(cls, type) and issubclass(cls, _pulsar.PulsarException)):
        cls = _pulsar.UnknownError
    message = str(error.message or "")
    exc: BaseException = cls(f"Pulsar error: {result.name}: {message}" if message else f"Pulsar error: {result.name}")
    if message:
        setattr(exc, _MESSAGE, message)
    return exc


class _Answer:
    """One asynchronous call's answer, awaited by the calling thread; an answer that comes after
    the caller gave up is closed, not leaked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: Any = None
        self._abandoned = False

    def __call__(self, value: Any) -> None:
        with self._lock:
            self._value = value
            abandoned = self._abandoned
        self._done.set()
        if abandoned and not isinstance(value, _pulsar.Error):
            value.close_async(lambda _result: None)

    def wait(self, timeout_s: float) -> Any:
        if not self._done.wait(timeout_s):
            with self._lock:
                if not self._done.is_set():
                    self._abandoned = True
                    raise _pulsar.Timeout("Pulsar error: TimeOut")
        if isinstance(self._value, _pulsar.Error):
            raise _raised(self._value)
        return self._value


class MessagedCalls:
    """A ``_pulsar.Client`` whose blocking creations raise with the error's message; every other
    attribute is the client's own."""

    def __init__(self, inner: Any, operation_timeout_s: float) -> None:
        self._inner = inner
        self._timeout_s = operation_timeout_s + _LATE_MARGIN_S

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _call(self, start: Callable[..., None], *args: Any) -> Any:
        answer = _Answer()
        start(*args, answer)
        return answer.wait(self._timeout_s)

    def create_producer(self, topic: str, conf: Any) -> Any:
        return self._call(self._inner.create_producer_async_v2, topic, conf)

    def subscribe(self, topic: str, subscription_name: str, conf: Any) -> Any:
        return self._call(self._inner.subscribe_async_v2, topic, subscription_name, conf)

    def subscribe_topics(self, topics: list[str], subscription_name: str, conf: Any) -> Any:
        return self._call(self._inner.subscribe_async_v2, topics, subscription_name, conf)

    def create_reader(self, topic: str, start_message_id: Any, conf: Any) -> Any:
        return self._call(self._inner.create_reader_async_v2, topic, start_message_id, conf)

    def get_topic_partitions(self, topic: str) -> Any:
        """The lookup has no ``_v2`` call: when credentials fail it (fast, before anything is
        made), a reader's creation, which fails the same way, gives the message."""
        try:
            return self._inner.get_topic_partitions(topic)
        except (_pulsar.AuthenticationError, _pulsar.AuthorizationError):
            probe = self._call(self._inner.create_reader_async_v2, topic, _pulsar.MessageId.earliest,
                               _pulsar.ReaderConfiguration())  # fmt: skip
            probe.close_async(lambda _result: None)
            raise


def with_messages(client: pulsar.Client, operation_timeout_s: float | None) -> pulsar.Client:
    """``client`` (made with ``operation_timeout_seconds=operation_timeout_s``, or its default),
    its creations raising with their messages when this pulsar-client has the ``_v2`` calls."""
    inner = client._client  # the one seam pulsar-client has for this
    if all(hasattr(inner, name) for name in ("create_producer_async_v2", "subscribe_async_v2",
                                               "create_reader_async_v2")):  # fmt: skip
        client._client = MessagedCalls(inner, operation_timeout_s or _OPERATION_TIMEOUT_S)
    return client
