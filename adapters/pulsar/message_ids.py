"""What a pulsar-client message id holds beyond its accessors, read from its serialized form
(``MessageIdData``): the first entry of a chunked message, the size of a batch."""

from __future__ import annotations

import pulsar

from hotstandby.adapters.pulsar.probe import _fields as protobuf_fields  # the project's protobuf decoder

__all__ = ["entries_of", "more_in_batch"]

_ENTRY, _BATCH_SIZE, _FIRST_CHUNK = 2, 6, 7  # MessageIdData fields


def entries_of(mid: pulsar.MessageId) -> tuple[int, int, int]:
    """``(ledger, first entry, last entry)`` of a message: a chunked one spans several entries
    (its id names the last; the first is inside its serialized form)."""
    first = protobuf_fields(bytes(mid.serialize())).get(_FIRST_CHUNK)
    first_entry = protobuf_fields(first).get(_ENTRY, mid.entry_id()) if isinstance(first, bytes) else mid.entry_id()
    return mid.ledger_id(), int(first_entry), mid.entry_id()


def more_in_batch(mid: pulsar.MessageId) -> bool:
    """Whether messages of the batch of ``mid`` come after it."""
    index = mid.batch_index()
    if index < 0:
        return False
    size = protobuf_fields(bytes(mid.serialize())).get(_BATCH_SIZE, 0)
    return isinstance(size, int) and index < size - 1
