"""confluent-kafka's checks of the arguments of the calls the Kafka facades take, with its
exception types and messages: made before anything else, as confluent-kafka makes them (a
closed consumer's ``poll("1")`` is a ``TypeError`` there too)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from hotstandby.adapters.kafka.surface import partition_list

__all__ = ["batch_arguments", "commit_arguments", "integer", "num_messages", "timeout"]

_MAX_MESSAGES = 1_000_000


def _name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def timeout(value: object) -> None:
    """A timeout in seconds: a number (``None`` too, for the facades' own callers: no limit)."""
    if value is not None and not isinstance(value, int | float):
        raise TypeError(f"must be real number, not {_name(value)}")


def integer(value: object) -> None:
    if not isinstance(value, int):
        raise TypeError(f"'{_name(value)}' object cannot be interpreted as an integer")


def num_messages(value: int) -> None:
    """``consume``'s batch size (its type is checked with the other arguments, its range after
    the closed check, as confluent-kafka checks them)."""
    if not 0 <= value <= _MAX_MESSAGES:
        raise ValueError("num_messages must be between 0 and 1000000 (1M)")


def commit_arguments(message: object, offsets: object, *, store: bool) -> None:
    """``commit``'s (``store``: ``store_offsets``') message or offsets."""
    if message is not None and offsets is not None:
        raise ValueError("message and offsets are mutually exclusive")
    if offsets is not None:
        for tp in partition_list(offsets):
            if tp.metadata is not None and "\x00" in tp.metadata:  # a C string: refused before anything is acknowledged
                raise ValueError("embedded null character")
    elif message is not None:
        if not isinstance(message, Message):
            raise TypeError("expected confluent_kafka.cimpl.Message")
        error = message.error()
        if error is not None:
            what = "store" if store else "commit"
            raise KafkaException(
                KafkaError(KafkaError._INVALID_ARG, f"Cannot {what} offsets for message with error: '{error.str()}'")
            )
    elif store:
        raise ValueError("expected either message or offsets")


def batch_arguments(topic: object, messages: object, partition: object) -> None:
    """``produce_batch``'s, all before any message is produced."""
    if not isinstance(topic, str):
        raise TypeError(f"argument 1 must be str, not {_name(topic)}")
    integer(partition)
    if not isinstance(messages, list):
        raise TypeError("messages must be a list")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TypeError(f"Message at index {i} must be a dict")
        _batch_message(i, message)


def _batch_message(i: int, message: dict[str, Any]) -> None:
    for field in ("value", "key"):
        if not isinstance(message.get(field), bytes | str | None):
            raise TypeError(f"Message {field} at index {i} must be bytes or str")
    if not isinstance(message.get("partition"), int | None):
        raise TypeError(f"Message partition at index {i} must be int")
    if message.get("timestamp") is not None:
        raise NotImplementedError("Message timestamps are not currently supported in batch mode")
