"""What a pulsar-client message id holds beyond its accessors, read from its serialized form
(``MessageIdData``): the size of a batch."""

from __future__ import annotations

import pulsar

from hotstandby.adapters.pulsar.probe import _fields as protobuf_fields  # the project's protobuf decoder

__all__ = ["more_in_batch"]

_BATCH_SIZE = 6  # a MessageIdData field


def more_in_batch(mid: pulsar.MessageId) -> bool:
    """Whether messages of the batch of ``mid`` come after it."""
    index = mid.batch_index()
    if index < 0:
        return False
    size = protobuf_fields(bytes(mid.serialize())).get(_BATCH_SIZE, 0)
    return isinstance(size, int) and index < size - 1
