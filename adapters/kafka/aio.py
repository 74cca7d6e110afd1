"""asyncio Kafka clients that follow a route: ``AIOProducer`` and ``AIOConsumer``, as in
:mod:`confluent_kafka.aio`.

``from hotstandby.adapters.kafka.aio import AIOProducer, AIOConsumer`` replaces
``from confluent_kafka.aio import AIOProducer, AIOConsumer``: the same constructors (the
configuration takes the ``hotstandby.*`` keys instead of ``bootstrap.servers``), coroutines,
batching and exceptions. They are confluent-kafka's own asyncio classes over the SDK's
:class:`~hotstandby.adapters.kafka.Producer` and :class:`~hotstandby.adapters.kafka.Consumer`:
each call runs the blocking facade on the executor, as confluent-kafka's runs librdkafka's, and
a switch runs on the facades' threads, so the event loop is never held by one. What differs:

* a callback (``on_assign``, ``on_revoke``, ``on_lost``, ``error_cb``, ``throttle_cb``,
  ``stats_cb``, ``on_commit``) may be a coroutine function or a plain one; the client calls it
  makes run on the facade thread that called it back (:mod:`.aio_callbacks`);
* a delivery is reported to the awaiting future on the event loop, also when the facade
  reports it from a thread of its own (a record re-sent after a switch);
* ``AIOProducer.close()`` also closes the facade, which stops following the route;
* the configuration given is copied, not changed in place.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
from typing import Any

try:
    from confluent_kafka.aio import AIOConsumer as _UpstreamConsumer
    from confluent_kafka.aio import AIOProducer as _UpstreamProducer
    from confluent_kafka.aio.producer._buffer_timeout_manager import BufferTimeoutManager
    from confluent_kafka.aio.producer._kafka_batch_executor import ProducerBatchExecutor
    from confluent_kafka.aio.producer._producer_batch_processor import ProducerBatchManager
except ImportError as exc:  # pragma: no cover - depends on the installed confluent-kafka
    raise ImportError("hotstandby.adapters.kafka.aio needs confluent-kafka with confluent_kafka.aio (2.16+)") from exc

from hotstandby.adapters.kafka.aio_callbacks import call_back, on_callers_thread, wrap_conf_callbacks
from hotstandby.adapters.kafka.consumer.consumer import Consumer
from hotstandby.adapters.kafka.producer.producer import Producer
from hotstandby.configcenter import ConfigCenter

__all__ = ["AIOConsumer", "AIOProducer"]

_COMMON_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")
_REBALANCE_CALLBACKS = ("on_assign", "on_revoke", "on_lost")


class AIOConsumer(_UpstreamConsumer):
    """:class:`confluent_kafka.aio.AIOConsumer` over a consumer that follows a route."""

    def __init__(
        self,
        consumer_conf: dict[str, Any],
        max_workers: int = 100,
        executor: concurrent.futures.Executor | None = None,
        *,
        center: ConfigCenter | None = None,
    ) -> None:
        if executor is None and max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        loop = asyncio.get_running_loop()
        conf = dict(consumer_conf)
        wrap_conf_callbacks(loop, conf, (*_COMMON_CALLBACKS, "on_commit"))
        self._facade = Consumer(conf, center=center)
        self._consumer = self._facade  # type: ignore[assignment]  # what the upstream methods call
        self._closed = False
        self._owns_executor = executor is None
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)

    async def _call(self, blocking_task: Any, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise RuntimeError("Consumer closed")
        return await on_callers_thread(self.executor, blocking_task, *args, **kwargs)

    async def subscribe(self, *args: Any, **kwargs: Any) -> Any:
        """As confluent-kafka's: the rebalance callbacks are called with this consumer."""
        loop = asyncio.get_running_loop()
        for name in _REBALANCE_CALLBACKS:
            if kwargs.get(name) is not None:
                kwargs[name] = functools.partial(self._rebalanced, loop, kwargs[name])
        return await self._call(self._consumer.subscribe, *args, **kwargs)

    def _rebalanced(self, loop: asyncio.AbstractEventLoop, callback: Any, _facade: Any, *args: Any) -> Any:
        return call_back(loop, callback, self, *args)

    @property
    def cluster(self) -> str:
        """The cluster the consumer reads now."""
        return self._facade.cluster


class _LoopSafeBatches:
    """What confluent-kafka's batch executor calls on its producer, with each message's
    delivery callback run on the event loop: the futures it resolves belong to the loop."""

    def __init__(self, producer: Producer, loop: asyncio.AbstractEventLoop) -> None:
        self._producer = producer
        self._loop = loop

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], partition: int = -1) -> int:
        for message in messages:
            callback = message.get("callback")
            if callback is not None:
                message["callback"] = functools.partial(self._on_loop, callback)
        return self._producer.produce_batch(topic, messages, partition=partition)

    def _on_loop(self, callback: Any, err: Any, msg: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits the future any more
            self._loop.call_soon_threadsafe(callback, err, msg)

    def poll(self, timeout: float = -1) -> int:
        return self._producer.poll(timeout)

    def flush(self, timeout: float = -1) -> int:
        return self._producer.flush(timeout)


class AIOProducer(_UpstreamProducer):
    """:class:`confluent_kafka.aio.AIOProducer` over a producer that follows a route."""

    def __init__(
        self,
        producer_conf: dict[str, Any],
        max_workers: int = 4,
        executor: concurrent.futures.Executor | None = None,
        batch_size: int = 1000,
        buffer_timeout: float = 1.0,
        *,
        center: ConfigCenter | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        conf = dict(producer_conf)
        wrap_conf_callbacks(self._loop, conf, _COMMON_CALLBACKS)
        self._facade = Producer(conf, center=center)
        self._producer = self._facade  # type: ignore[assignment]  # what the upstream methods call
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)
        self._batch_size = batch_size
        self._is_closed = False
        batches = _LoopSafeBatches(self._facade, self._loop)
        self._kafka_executor = ProducerBatchExecutor(batches, self.executor)  # type: ignore[arg-type]
        self._batch_processor = ProducerBatchManager(self._kafka_executor)
        self._buffer_timeout_manager = BufferTimeoutManager(self._batch_processor, self._kafka_executor, buffer_timeout)
        if buffer_timeout > 0:
            self._buffer_timeout_manager.start_timeout_monitoring()

    async def _call(self, blocking_task: Any, *args: Any, **kwargs: Any) -> Any:
        return await on_callers_thread(self.executor, blocking_task, *args, **kwargs)

    async def close(self) -> None:
        """As confluent-kafka's (flush everything buffered, wait for its delivery), then close
        the producer facade: it stops following the route."""
        try:
            await super().close()
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self._facade.close)

    @property
    def cluster(self) -> str:
        """The cluster the producer sends to now."""
        return self._facade.cluster
