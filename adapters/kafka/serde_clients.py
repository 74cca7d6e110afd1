"""``SerializingProducer`` and ``DeserializingConsumer``: confluent-kafka's serde clients over
the facades, with the same configuration (``key.serializer``, ``value.deserializer``, their
``.builder`` variants), the same errors and the same ownership of serdes built from a builder
(closed by :meth:`close`).

confluent-kafka's classes derive from its C clients, so they cannot sit on the facades; these
are the facades' own, built with confluent-kafka's serde configuration helpers.
"""

from __future__ import annotations

import contextlib
from typing import Any

from confluent_kafka import Message
from confluent_kafka._serde_builder import (
    SharedClusterIdResolver,
    build_serdes,
    close_serdes,
    pop_serde_props,
    propagate_cluster_id_resolver,
)
from confluent_kafka.error import (
    ConsumeError,
    KeyDeserializationError,
    KeySerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from hotstandby.adapters.kafka.consumer.consumer import Consumer
from hotstandby.adapters.kafka.producer.producer import Producer

__all__ = ["DeserializingConsumer", "SerializingProducer"]


def _serdes(conf: dict[str, Any], key: str, value: str) -> tuple[Any, Any, list[Any], dict[str, Any]]:
    """The key and value serdes ``conf`` names, those built here (owned), and the rest of it."""
    specs, rest = pop_serde_props(conf, key, value)
    (key_serde, value_serde), owned, rest = build_serdes(specs, rest)
    return key_serde, value_serde, owned, rest


def _closing_on_failure(owned: list[Any]) -> contextlib.AbstractContextManager[None]:
    @contextlib.contextmanager
    def closing() -> Any:
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                close_serdes(owned)
            raise

    return closing()


class SerializingProducer(Producer):
    """:class:`confluent_kafka.SerializingProducer` over the facade: ``produce(topic, key=,
    value=)`` serializes with ``key.serializer`` and ``value.serializer``, then produces."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self._key_serializer, self._value_serializer, self._owned_serdes, rest = _serdes(
            conf, "key.serializer", "value.serializer"
        )
        with _closing_on_failure(self._owned_serdes):
            super().__init__(rest)
            propagate_cluster_id_resolver(SharedClusterIdResolver(self.cluster_id),
                                          [self._key_serializer, self._value_serializer])  # fmt: skip

    def produce(  # type: ignore[override]
        self,
        topic: str,
        key: Any = None,
        value: Any = None,
        partition: int = -1,
        on_delivery: Any = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        """Serialize ``key`` and ``value`` (``KeySerializationError``,
        ``ValueSerializationError``) and produce them, as confluent-kafka's."""
        if self._s.closed:  # before the serializers, which may register schemas
            raise RuntimeError("Producer has been closed")
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
            except Exception as exc:
                raise KeySerializationError(exc) from exc
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
            except Exception as exc:
                raise ValueSerializationError(exc) from exc
        super().produce(topic, value, key, headers=headers, partition=partition, timestamp=timestamp,
                        on_delivery=on_delivery)  # fmt: skip

    def close(self, timeout: float = 10.0) -> bool:
        """Close the producer, then the serializers built from a builder."""
        closed = super().close(timeout)
        owned, self._owned_serdes = self._owned_serdes, []
        close_serdes(owned)
        return closed


class DeserializingConsumer(Consumer):
    """:class:`confluent_kafka.DeserializingConsumer` over the facade: ``poll`` deserializes
    with ``key.deserializer`` and ``value.deserializer`` and raises ``ConsumeError`` for an
    error event; ``consume`` is not offered, as in confluent-kafka."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self._key_deserializer, self._value_deserializer, self._owned_serdes, rest = _serdes(
            conf, "key.deserializer", "value.deserializer"
        )
        with _closing_on_failure(self._owned_serdes):
            super().__init__(rest)
            propagate_cluster_id_resolver(SharedClusterIdResolver(self.cluster_id),
                                          [self._key_deserializer, self._value_deserializer])  # fmt: skip

    def poll(self, timeout: float = -1) -> Message | None:  # type: ignore[override]
        msg = super().poll(timeout)
        if msg is None:
            return None
        error = msg.error()
        if error is not None:
            raise ConsumeError(error, kafka_message=msg)
        topic = msg.topic() or ""
        ctx = SerializationContext(topic, MessageField.KEY, msg.headers())
        key, value = msg.key(), msg.value()
        if self._key_deserializer is not None:
            try:
                key = self._key_deserializer(key, ctx)
            except Exception as exc:
                raise KeyDeserializationError(exception=exc, kafka_message=msg) from exc
        if self._value_deserializer is not None:
            ctx.field = MessageField.VALUE
            try:
                value = self._value_deserializer(value, ctx)
            except Exception as exc:
                raise ValueDeserializationError(exception=exc, kafka_message=msg) from exc
        msg.set_key(key)
        msg.set_value(value)
        return msg

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Not offered, as in confluent-kafka: use :meth:`poll`."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the consumer, then the deserializers built from a builder."""
        super().close()
        owned, self._owned_serdes = self._owned_serdes, []
        close_serdes(owned)
