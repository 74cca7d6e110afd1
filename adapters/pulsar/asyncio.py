"""An asyncio Pulsar client that follows a route, as :mod:`pulsar.asyncio`.

``from hotstandby.adapters.pulsar.asyncio import Client`` replaces
``from pulsar.asyncio import Client``: ``Client(route, etcd=..., **pulsar_client_keywords)``
(the facade's arguments, docs/pulsar-api.md) instead of a service URL; the same coroutines,
arguments and results; failures raise :class:`pulsar.asyncio.PulsarException` with the
pulsar-client result, as there. Producers, consumers and readers move with the client at a
switch, through the blocking facade (:class:`hotstandby.adapters.pulsar.Client`): its calls run
on threads, so a switch never holds the event loop.

* ``send``: the messages of one producer go out in the order the coroutines were called (one
  sending thread per producer).
* ``receive`` and ``read_next``: one receiving thread per consumer or reader. A message that
  arrives for a ``receive`` cancelled meanwhile (``asyncio.wait_for``) is handed out by the
  next ``receive``, not lost until redelivery.
* The constructor reads the route from the config center and connects (as the blocking
  facade's), bounded by the etcd timeout; make the client before the loop is busy.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pulsar
import pulsar.asyncio as _upstream

from hotstandby.adapters.pulsar.client.client import Client as _Client
from hotstandby.adapters.pulsar.client.error_messages import message_of
from hotstandby.adapters.pulsar.consumer.consumer import Consumer as _Consumer
from hotstandby.adapters.pulsar.producer.producer import Producer as _Producer
from hotstandby.adapters.pulsar.reader.reader import Reader as _Reader

__all__ = ["Client", "Consumer", "Producer", "PulsarException", "Reader"]

PulsarException = _upstream.PulsarException
T = TypeVar("T")
_RECEIVE_SLICE_MS = 200  # how soon a receiving thread notices that its receive was cancelled


def _translated(exc: BaseException) -> BaseException:
    """pulsar-client's blocking exception as the asyncio API raises it (its classes are named
    after the results)."""
    if isinstance(exc, pulsar.PulsarException) and not isinstance(exc, PulsarException):
        result = getattr(pulsar.Result, type(exc).__name__, pulsar.Result.UnknownError)
        translated: BaseException = PulsarException(result, message_of(exc))
        return translated
    return exc


async def _run(executor: concurrent.futures.Executor | None, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        running = asyncio.get_running_loop().run_in_executor(executor, functools.partial(call, *args, **kwargs))
    except RuntimeError as exc:  # the client's threads are shut down: it was closed
        raise _closed() from exc
    try:
        return await running
    except pulsar.PulsarException as exc:
        raise _translated(exc) from exc


def _closed() -> Exception:
    closed: Exception = PulsarException(pulsar.Result.AlreadyClosed)
    return closed


def _message_id(msg_id: Any) -> pulsar.MessageId:
    if isinstance(msg_id, pulsar.MessageId):
        return msg_id
    return pulsar.MessageId(msg_id.partition(), msg_id.ledger_id(), msg_id.entry_id(), msg_id.batch_index())


def _one_thread(name: str) -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)


class _Receiving:
    """Receives on a thread of its own; what arrives for a cancelled receive is kept."""

    def __init__(self, receive: Callable[[int], pulsar.Message], name: str) -> None:
        self._receive = receive
        self._thread = _one_thread(name)
        self._kept: collections.deque[pulsar.Message] = collections.deque()
        self._closed = False

    def _until(self, cancelled: threading.Event) -> pulsar.Message | None:
        while not cancelled.is_set():
            if self._kept:
                return self._kept.popleft()
            try:
                return self._receive(_RECEIVE_SLICE_MS)
            except pulsar.Timeout:
                continue
        return None

    def _keep(self, done: concurrent.futures.Future[pulsar.Message | None]) -> None:
        if not done.cancelled() and done.exception() is None and (msg := done.result()) is not None:
            self._kept.append(msg)

    async def next(self) -> pulsar.Message:
        if self._closed:
            raise _closed()
        if self._kept:
            return self._kept.popleft()
        cancelled = threading.Event()
        done = self._thread.submit(self._until, cancelled)
        try:
            msg = await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            cancelled.set()
            done.add_done_callback(self._keep)
            raise
        except pulsar.PulsarException as exc:
            raise _translated(exc) from exc
        assert msg is not None  # only a cancelled receive returns None
        return msg

    def close(self) -> None:
        self._closed = True
        self._thread.shutdown(wait=False)


class Producer:
    """:class:`pulsar.asyncio.Producer` over a producer that follows the route."""

    def __init__(self, producer: _Producer, executor: concurrent.futures.Executor) -> None:
        self._producer = producer
        self._executor = executor
        self._sender = _one_thread("hotstandby-aio-send")
        self._closed = False

    async def send(self, content: Any, properties: dict[str, str] | None = None, **options: Any) -> pulsar.MessageId:
        """Send a message; its id on the cluster that acknowledged it last (a message the old
        cluster had not acknowledged at a switch is sent again to the new one)."""
        if self._closed:  # as pulsar-client's
            raise _closed()
        loop = asyncio.get_running_loop()
        acknowledged: asyncio.Future[Any] = loop.create_future()

        def settle(result: pulsar.Result, msg_id: Any) -> None:
            if not acknowledged.done():
                if result == pulsar.Result.Ok:
                    acknowledged.set_result(msg_id)
                else:
                    acknowledged.set_exception(PulsarException(result))

        def callback(result: pulsar.Result, msg_id: Any) -> None:
            loop.call_soon_threadsafe(settle, result, msg_id)

        given = {k: v for k, v in options.items() if v is not None}
        await _run(self._sender, self._producer.send_async, content, callback, properties, **given)
        return _message_id(await acknowledged)

    async def flush(self) -> None:
        await _run(self._executor, self._producer.flush)

    async def close(self) -> None:
        if self._closed:
            raise _closed()
        try:
            await _run(self._executor, self._producer.close)
        finally:
            self._closed = True
            self._sender.shutdown(wait=False)

    def topic(self) -> str:
        return self._producer.topic()

    def producer_name(self) -> str:
        return self._producer.producer_name()

    def last_sequence_id(self) -> int:
        return self._producer.last_sequence_id()

    def is_connected(self) -> bool:
        return self._producer.is_connected()


class Consumer:
    """:class:`pulsar.asyncio.Consumer` over a consumer that follows the route."""

    def __init__(self, consumer: _Consumer, executor: concurrent.futures.Executor) -> None:
        self._consumer = consumer
        self._executor = executor
        self._receiving = _Receiving(lambda ms: consumer.receive(timeout_millis=ms), "hotstandby-aio-receive")

    async def receive(self) -> pulsar.Message:
        """The next message the subscription has not acknowledged (on any cluster)."""
        return await self._receiving.next()

    async def acknowledge(self, message: Any) -> None:
        await _run(self._executor, self._consumer.acknowledge, message)

    async def acknowledge_cumulative(self, message: Any) -> None:
        await _run(self._executor, self._consumer.acknowledge_cumulative, message)

    async def negative_acknowledge(self, message: Any) -> None:
        await _run(self._executor, self._consumer.negative_acknowledge, message)

    async def unsubscribe(self) -> None:
        await _run(self._executor, self._consumer.unsubscribe)

    async def seek(self, messageid: pulsar.MessageId | int) -> None:
        if not isinstance(messageid, (pulsar.MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        await _run(self._executor, self._consumer.seek, messageid)

    async def close(self) -> None:
        try:
            await _run(self._executor, self._consumer.close)
        finally:
            self._receiving.close()

    async def get_last_message_id(self) -> Any:
        return await _run(self._executor, self._consumer.get_last_message_id)

    def redeliver_unacknowledged_messages(self) -> None:
        self._consumer.redeliver_unacknowledged_messages()

    def topic(self) -> str:
        return self._consumer.topic()

    def subscription_name(self) -> str:
        return self._consumer.subscription_name()

    def consumer_name(self) -> str:
        return self._consumer.consumer_name()


class Reader:
    """:class:`pulsar.asyncio.Reader` over a reader that follows the route."""

    def __init__(self, reader: _Reader, executor: concurrent.futures.Executor) -> None:
        self._reader = reader
        self._executor = executor
        self._receiving = _Receiving(lambda ms: reader.read_next(timeout_millis=ms), "hotstandby-aio-read")

    async def read_next(self) -> pulsar.Message:
        """The next message; after a switch, what was returned before is skipped."""
        return await self._receiving.next()

    async def has_message_available(self) -> bool:
        return await _run(self._executor, self._reader.has_message_available)

    async def seek(self, messageid: pulsar.MessageId | int) -> None:
        if not isinstance(messageid, (pulsar.MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        await _run(self._executor, self._reader.seek, messageid)

    async def close(self) -> None:
        try:
            await _run(self._executor, self._reader.close)
        finally:
            self._receiving.close()

    def topic(self) -> str:
        return self._reader.topic()

    def is_connected(self) -> bool:
        return self._reader.is_connected()


class Client:
    """:class:`pulsar.asyncio.Client` over a client that follows ``route``; the arguments are
    :class:`hotstandby.adapters.pulsar.Client`'s."""

    def __init__(self, route: str, *, max_workers: int = 8, **kwargs: Any) -> None:
        self._client = _Client(route, **kwargs)
        self._shut_down = False
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers,
                                                               thread_name_prefix="hotstandby-aio")  # fmt: skip

    @property
    def cluster(self) -> str:
        """The cluster the client uses now."""
        return self._client.cluster

    async def create_producer(self, topic: str, *, batching_enabled: bool = True, **kwargs: Any) -> Producer:
        """As :meth:`pulsar.asyncio.Client.create_producer`, which batches by default (the
        blocking client does not)."""
        producer = await _run(self._executor, self._client.create_producer, topic,
                              batching_enabled=batching_enabled, **kwargs)  # fmt: skip
        return Producer(producer, self._executor)

    async def subscribe(
        self, topic: str | list[str], subscription_name: str, *, is_pattern_topic: bool = False, **kwargs: Any
    ) -> Consumer:
        """As :meth:`pulsar.asyncio.Client.subscribe`: a topic, a list of topics, or with
        ``is_pattern_topic`` a regular expression of topic names."""
        selected: str | list[str] | re.Pattern[str] = topic
        if is_pattern_topic:
            if not isinstance(topic, str):
                raise ValueError("Argument 'topic' must be a string when 'is_pattern_topic' is True; "
                                 "lists of topics do not support pattern subscriptions")  # fmt: skip
            selected = re.compile(topic)
        consumer = await _run(self._executor, self._client.subscribe, selected, subscription_name, **kwargs)
        return Consumer(consumer, self._executor)

    async def create_reader(self, topic: str, start_message_id: pulsar.MessageId, **kwargs: Any) -> Reader:
        reader = await _run(self._executor, self._client.create_reader, topic, start_message_id, **kwargs)
        return Reader(reader, self._executor)

    async def get_topic_partitions(self, topic: str) -> list[str]:
        return await _run(self._executor, self._client.get_topic_partitions, topic)

    def shutdown(self) -> None:
        self._client.shutdown()
        self._executor.shutdown(wait=False)
        self._shut_down = True

    async def close(self) -> None:
        """As :meth:`pulsar.asyncio.Client.close`: ``AlreadyClosed`` the second time; once
        after :meth:`shutdown`, it has nothing left to do."""
        if self._shut_down:
            self._shut_down = False
            return
        try:
            await _run(self._executor, self._client.close)
        finally:
            self._executor.shutdown(wait=False)
