"""What the Kafka facades check and raise as confluent-kafka does (see docs/kafka-api.md).

confluent-kafka's own types and messages for: a missing or wrong configuration, values of its
settings the SDK reads itself, malformed keys, values and headers, calls after ``close()``;
and the one error of the methods the facades do not offer across a switch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from hotstandby.failover.identity import HEADER

__all__ = [
    "HANDLE_CLOSED",
    "Closable",
    "DeliveryCallback",
    "Header",
    "as_bytes",
    "bool_setting",
    "config_dict",
    "delivery_settings",
    "headers_list",
    "int_setting",
    "not_supported",
    "partition_list",
    "topic_partition",
]

Header = tuple[str, str | bytes | None]
DeliveryCallback = Callable[[KafkaError | None, Any], None]
HANDLE_CLOSED = "Handle has been closed"  # confluent-kafka's message for the handle's methods
_TRUE = frozenset({"true", "t", "1"})
_FALSE = frozenset({"false", "f", "0"})


def config_dict(config: object, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as confluent-kafka takes it: a dict, keywords as properties too."""
    if config is None and kwargs:
        return dict(kwargs)
    if not isinstance(config, dict):
        raise TypeError("expected configuration dict")
    return {**config, **kwargs}


def _invalid(key: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._INVALID_ARG, f'Invalid value for configuration property "{key}"'))


def int_setting(raw: Mapping[str, Any], key: str, default: int) -> int:
    """A numeric client setting the SDK reads itself; a bad one fails as librdkafka's would."""
    value = raw.get(key, default)
    if isinstance(value, bool):
        raise _invalid(key)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _invalid(key) from None


def bool_setting(raw: Mapping[str, Any], key: str, default: bool) -> bool:
    """A boolean client setting the SDK reads itself (librdkafka's spellings)."""
    value = raw.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f'Expected bool value for "{key}": true or false'))


def delivery_settings(raw: dict[str, Any]) -> tuple[DeliveryCallback | None, bool, dict[str, Any]]:
    """confluent-kafka's own delivery settings, taken out of the configuration: the SDK needs
    every delivery report from librdkafka and passes them on as confluent-kafka would.

    ``on_delivery`` (any case) is the callback of records produced without one;
    ``delivery.report.only.error`` (a bool) reports failures only."""
    rest = dict(raw)
    on_delivery: DeliveryCallback | None = None
    for name in [k for k in rest if k.lower() == "on_delivery"]:
        on_delivery = rest.pop(name)
        if not callable(on_delivery):
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"{name} requires a callable object"))
    only_errors = rest.pop("delivery.report.only.error", False)
    if not isinstance(only_errors, bool):
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "delivery.report.only.error requires bool"))
    return on_delivery, only_errors, rest


def as_bytes(value: object, argument: int) -> bytes | None:
    """A key or value (``produce``'s ``argument``-th): None, bytes or a str (UTF-8), as
    confluent-kafka takes."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytearray | memoryview):
        raise TypeError(f"argument {argument} must be read-only bytes-like object, not {type(value).__name__}")
    raise TypeError(f"a bytes-like object is required, not '{type(value).__name__}'")


def _header_value(value: object) -> str | bytes | None:
    if value is None or isinstance(value, bytes | str):
        return value
    raise TypeError(f"expected header value to be None, binary, or unicode string, not {type(value).__name__}")


def headers_list(headers: object) -> list[Header]:
    """An application's headers (a dict or a list of pairs) as confluent-kafka checks them; the
    ``hs-id`` header is the SDK's own."""
    if not headers:
        return []
    if isinstance(headers, dict):
        items = list(headers.items())
    elif isinstance(headers, list):
        items = headers
    else:
        raise TypeError(f"expected headers to be dict or list of (key, value) tuples, not {type(headers).__name__}")
    out: list[Header] = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("Headers are expected to be a list of (key, value) tuples")
        out.append((str(item[0]), _header_value(item[1])))
    if any(k == HEADER for k, _ in out):
        raise ValueError(f"the {HEADER!r} header is set by hotstandby; do not set it yourself")
    return out


def partition_list(partitions: object) -> list[TopicPartition]:
    """``assign``'s and its kin's argument, checked as confluent-kafka checks it."""
    if not isinstance(partitions, list):
        raise TypeError("requires list of TopicPartition")
    return [topic_partition(tp) for tp in partitions]


def topic_partition(partition: object) -> TopicPartition:
    if not isinstance(partition, TopicPartition):
        raise TypeError("expected cimpl.TopicPartition")
    return partition


def not_supported(method: str, why: str) -> NoReturn:
    """The error of a confluent-kafka method the facade does not offer (docs/kafka-api.md)."""
    raise KafkaException(
        KafkaError(KafkaError._NOT_IMPLEMENTED, f"{method}() is not supported by hotstandby: {why} (docs/kafka-api.md)")
    )


class Closable:
    """Raises confluent-kafka's ``RuntimeError`` for calls after ``close()``, and, as there, for
    calls on an object of a subclass whose ``__init__`` did not call the facade's."""

    _closed_message = "closed"
    _closed = True  # until __init__ ran

    def _check_open(self, message: str | None = None) -> None:
        if self._closed:
            raise RuntimeError(message or self._closed_message)
