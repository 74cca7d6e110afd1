"""What a Pulsar ``Producer`` (:mod:`hotstandby.adapters.pulsar.producer.producer`) keeps of a message
until its re-send cannot be needed any more, and how it reports a failed send."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulsar
from pulsar.schema import BytesSchema, Schema

__all__ = ["BYTES", "Encoded", "Message", "SendCallback", "exception_for"]

SendCallback = Callable[[pulsar.Result, Any], None]
BYTES = BytesSchema()  # pulsar-client's default schema: bytes only


def exception_for(result: pulsar.Result) -> pulsar.PulsarException:
    """The exception pulsar-client raises for ``result`` (its classes are named after the results)."""
    kind = getattr(pulsar.exceptions, result.name, pulsar.PulsarException)
    return kind(f"Failed to send message: {result.name}")


class Encoded(Schema):  # type: ignore[misc]  # pulsar.schema is untyped
    """The application's schema towards the broker (its schema info), for content the SDK
    encoded with it already: re-sends then neither encode twice nor need the object."""

    def __init__(self, schema: Schema) -> None:
        self._record_cls = bytes
        self._schema_info = schema.schema_info()
        self._inner_schema = schema

    def encode(self, obj: bytes) -> bytes:
        return obj

    def decode(self, data: bytes) -> Any:
        return self._inner_schema.decode(data)


class Message:
    """A message sent and not yet acknowledged, then in the replay window."""

    __slots__ = ("callback", "content", "key", "options", "properties", "resent")

    def __init__(
        self,
        content: bytes | None,
        properties: dict[str, str],
        options: dict[str, Any],
        key: tuple[int, int],
        callback: SendCallback | None,
    ) -> None:
        self.content, self.properties, self.key, self.callback = content, properties, key, callback
        self.options = options  # the send_async keywords given, passed again when re-sent
        # Sent again by a switch: a cluster may then hold it from a send that was never
        # acknowledged, so its copy there proves nothing about replication.
        self.resent = False

    @property
    def partition(self) -> int:
        return self.key[0]

    @property
    def size(self) -> int:
        """Bytes counted against the replay window (a null value: none)."""
        return 0 if self.content is None else len(self.content)
