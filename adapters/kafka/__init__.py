"""Kafka adapter (confluent-kafka): drop-in ``Producer`` and ``Consumer`` that follow a route.

``from hotstandby.adapters.kafka import Producer`` imports confluent_kafka; this package itself
does not, so the probe and the MM2 codec work without it. Type checkers see the classes through
the ``TYPE_CHECKING`` imports; at run time they are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotstandby.adapters.kafka.consumer.consumer import Consumer
    from hotstandby.adapters.kafka.producer.producer import Producer
    from hotstandby.adapters.kafka.serde_clients import DeserializingConsumer, SerializingProducer

__all__ = ["Consumer", "DeserializingConsumer", "Producer", "SerializingProducer"]

_LAZY = {"Consumer": "consumer", "DeserializingConsumer": "serde_clients", "Producer": "producer",
         "SerializingProducer": "serde_clients"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from hotstandby.registry import import_adapter_module

        return getattr(import_adapter_module("kafka", _LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
