"""Which physical partitions of the cluster in use a ``TopicPartition`` from the application
names — given to ``assign``, ``seek`` or ``commit``.

Messages report their logical topic (``orders``) whether they were read from the topic itself
or from a remote copy of it (``kafka-b.orders``), and the offset they had in the physical
partition they were read from. So:

* a logical name stands for every physical partition behind it on the cluster in use (the
  topic and its copies) when no offset or a special one (``OFFSET_BEGINNING``, ``OFFSET_END``,
  ``OFFSET_STORED``, ``OFFSET_INVALID``) is given; a copy's own name stands for the copy;
* an explicit offset names a record of one physical partition: the one named — for a logical
  name, the topic of that name — unless that partition did not read the record at the offset
  and exactly one of its copies did. The position was then taken from a message read from
  the copy (``msg.topic()`` is the logical name), and names the copy. Without that the common
  ``seek(TopicPartition(msg.topic(), msg.partition(), msg.offset()))`` and
  ``commit(offsets=[... msg.offset() + 1])`` would point at another record.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED, TopicPartition

from hotstandby.adapters.kafka.consumer.state import ConsumerState, Slot

__all__ = ["SPECIAL_OFFSETS", "PhysicalAssignment", "named_slot", "physical_assignment"]

SPECIAL_OFFSETS = frozenset({OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, OFFSET_INVALID})


def named_slot(state: ConsumerState, topic: str, partition: int, read: int) -> Slot:
    """The physical partition meant by ``topic``/``partition`` in a position at which the
    record ``read`` was read (see the module doc)."""
    slot = (topic, partition)
    acks = state.acks
    if read < 0 or acks.read_at(slot, read) or state.logical_of(topic) != topic:
        return slot
    copies = [(p, partition) for p, name in list(state.logical.items()) if name == topic and p != topic]
    read_there = [copy for copy in copies if acks.read_at(copy, read)]
    return read_there[0] if len(read_there) == 1 else slot


def _logical_name(state: ConsumerState, topic: str, prefixes: Sequence[str]) -> str:
    known = state.logical.get(topic)
    if known is not None:
        return str(known)
    for prefix in prefixes:
        if topic.startswith(prefix) and len(topic) > len(prefix):
            return topic[len(prefix) :]
    return topic


class PhysicalAssignment:
    """Physical partitions with their start offsets, and the logical partitions they serve."""

    def __init__(self) -> None:
        self.offsets: dict[Slot, int] = {}
        self.names: dict[str, str] = {}  # physical topic -> logical topic

    def partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p, o) for (t, p), o in sorted(self.offsets.items())]

    def logical_keys(self) -> set[Slot]:
        return {(self.names[t], p) for t, p in self.offsets}


def physical_assignment(
    state: ConsumerState, partitions: Sequence[TopicPartition], prefixes: Sequence[str]
) -> PhysicalAssignment:
    """The physical partitions on the cluster in use (copies carry ``prefixes``) behind the
    partitions the application named, with the offsets it gave (see the module doc)."""
    out = PhysicalAssignment()
    for tp in partitions:
        logical = _logical_name(state, tp.topic, prefixes)
        behind = [logical, *(prefix + logical for prefix in prefixes)]
        for physical in behind:
            out.names[physical] = logical
            out.offsets.setdefault((physical, tp.partition), OFFSET_INVALID)
        if tp.offset in SPECIAL_OFFSETS:
            for physical in behind if tp.topic == logical else [tp.topic]:
                out.offsets[(physical, tp.partition)] = tp.offset
        else:
            out.offsets[named_slot(state, tp.topic, tp.partition, tp.offset)] = tp.offset
    return out
