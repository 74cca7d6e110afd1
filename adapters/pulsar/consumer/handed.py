"""What a Pulsar ``Consumer`` handed out and the application has not acknowledged yet: on the
cluster in use (by message key), and on the cluster it left last (acknowledged there by
identity only, see :mod:`hotstandby.adapters.pulsar.consumer.consumer`)."""

from __future__ import annotations

import pulsar

from hotstandby.failover.identity import HEADER, RecordId

__all__ = ["Handed", "HandedMessage", "HandedOut", "MessageKey", "Slot", "hand_out", "id_key", "stored_at"]

# What tells a received message from any other: its identity (the same on every cluster and
# for every copy) or, for a message without one, where it is stored (topic, ledger, entry,
# batch index: five calls into the client library, so only then).
MessageKey = tuple[str, int, int, int] | RecordId
Slot = tuple[str, int]  # (topic or partition topic, partition): where positions count


class HandedMessage(pulsar.Message):  # type: ignore[misc]  # pulsar is untyped
    """A message as consumers and readers hand it out: pulsar's, without the SDK's ``hs-id``
    property (the SDK keeps the identity aside, see
    :func:`hotstandby.adapters.pulsar.adapter.identity_of`)."""

    def properties(self) -> dict[str, str]:
        properties: dict[str, str] = dict(super().properties())
        properties.pop(HEADER, None)
        return properties


_HANDED: dict[type, type] = {pulsar.Message: HandedMessage}


def hand_out(msg: pulsar.Message, key: MessageKey) -> pulsar.Message:
    """``msg``, now showing the application its own properties only, with its key kept aside
    (a class swap and an attribute: no copy, once per message)."""
    cls = type(msg)
    if not issubclass(cls, HandedMessage):
        handed = _HANDED.get(cls)
        if handed is None:  # a subclass of pulsar.Message (not made by pulsar-client)
            handed = _HANDED[cls] = type(f"Handed{cls.__name__}", (HandedMessage, cls), {})
        msg.__class__ = handed
    msg._hs_key = key  # pulsar.Message is a plain Python object
    return msg


def stored_at(msg: pulsar.Message) -> tuple[str, int, int, int]:
    mid = msg.message_id()
    return (str(msg.topic_name()), mid.ledger_id(), mid.entry_id(), mid.batch_index())


def id_key(mid: pulsar.MessageId) -> tuple[int, int, int, int]:
    return (mid.ledger_id(), mid.entry_id(), mid.batch_index(), mid.partition())


class Handed:
    """A message handed out and not acknowledged yet. The message carries its key
    (``_hs_key``), not this: no reference cycle, so it is freed as soon as the application
    and the broker acknowledgement are done with it, not by the garbage collector."""

    __slots__ = ("key", "message", "position", "rid", "slot")

    def __init__(
        self, key: MessageKey, slot: Slot, position: int, rid: RecordId | None, message: pulsar.Message
    ) -> None:
        self.key, self.slot, self.position, self.rid = key, slot, position, rid
        self.message = message  # for acknowledgements by message id, and its redelivery count


class HandedOut:
    """The consumer's messages out with the application (its lock held)."""

    __slots__ = ("current", "left")

    def __init__(self) -> None:
        self.current: dict[MessageKey, Handed] = {}
        self.left: list[Handed] = []  # handed out on the cluster left last, not acknowledged there

    def of(self, message: pulsar.Message) -> Handed | None:
        """What ``message`` was handed out as, if it still is (on the current cluster)."""
        key: MessageKey | None = getattr(message, "_hs_key", None)
        handed = None if key is None else self.current.get(key)
        return handed if handed is not None and handed.message is message else None

    def by_id(self, mid: pulsar.MessageId) -> pulsar.Message | None:
        """The message out under id ``mid`` (here or on the cluster left), if any. A search,
        not on the hot path: acknowledging by message is cheaper."""
        # message_id() gives a _pulsar.MessageId; pulsar.MessageId wraps one: either is an id.
        wanted = id_key(mid)
        for handed in (*self.current.values(), *self.left):
            if id_key(handed.message.message_id()) == wanted:
                return handed.message
        return None

    def only_left(self, mid: pulsar.MessageId) -> bool:
        """``mid`` is the id of a message handed out on the cluster left last, and of none
        handed out on the cluster in use."""
        wanted = id_key(mid)
        if any(id_key(h.message.message_id()) == wanted for h in self.current.values()):
            return False
        return any(id_key(h.message.message_id()) == wanted for h in self.left)

    def leave(self) -> int:
        """A switch: what is out now was handed out on the cluster left last (returns how many)."""
        self.left = sorted(self.current.values(), key=lambda h: (h.slot, h.position))
        self.current.clear()
        return len(self.left)

    def left_of(self, message: pulsar.Message) -> Handed | None:
        return next((h for h in self.left if h.message is message), None)

    def take_left(self, slot: Slot, through: int | None) -> list[Handed]:
        """Remove and return what ``slot`` handed out on the cluster left last, up to position
        ``through`` (None: all of it)."""
        covered = [h for h in self.left if h.slot == slot and (through is None or h.position <= through)]
        if covered:
            gone = {id(h) for h in covered}
            self.left = [h for h in self.left if id(h) not in gone]
        return covered
