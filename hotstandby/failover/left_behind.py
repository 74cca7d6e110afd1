"""What a consumer handed out on a cluster it has left and that was not acknowledged there: the
:class:`~hotstandby.failover.ledger.ack_tracker.AckTracker`'s record of it, kept from one switch to the
next for acknowledgements that come late (a Kafka commit of a message the application got
before the switch)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.delivered import Delivered, holds

__all__ = ["LeftBehind"]

Slot = tuple[str, int]


class LeftBehind:
    """Per slot of the cluster left, the records handed out there and not acknowledged."""

    def __init__(self) -> None:
        self._slots: dict[Slot, Delivered] = {}

    def keep(self, slots: Mapping[Slot, Delivered], aside: Mapping[Slot, Sequence[Delivered]]) -> None:
        """A switch: these are now what was left behind (``aside``: records a slot handed out
        before it was read again from an earlier position), replacing what was kept before."""
        self._slots = {slot: d for slot, d in slots.items() if d.entries}
        for slot, olds in aside.items():  # one list per slot, in position order
            current = self._slots.get(slot)
            entries = sorted((e for d in (*olds, current) if d is not None for e in d.entries), key=lambda e: e[0])
            handover = olds[0].handover if current is None else current.handover
            merged = self._slots[slot] = handover.members[slot] = Delivered(olds[0].logical, handover)
            merged.entries.extend(entries)
            if current is not None:
                merged.after = current.after

    def take(
        self, slot: Slot, position: int, rid: RecordId | None, timestamp_ms: int
    ) -> list[tuple[str, RecordId]] | None:
        """The record was processed: it and what a commit of it covers — the records of its slot
        handed out before it, and of the slots of its logical partition (a topic's remote
        copies) — are no longer kept; their identities, to acknowledge. None when the record is
        not one left behind."""
        delivered = self._slots.get(slot)
        if delivered is None or not holds(delivered, position, rid, timestamp_ms):
            return None
        taken = list(_through(delivered, position))
        for other, handed in delivered.handed_before(position).items():
            sibling = self._slots.get(other)
            if sibling is not None:
                taken += _through(sibling, handed)
        return taken


def _through(delivered: Delivered, position: int) -> Iterator[tuple[str, RecordId]]:
    """Takes the records ``delivered`` kept up to ``position``: their identities."""
    entries = delivered.entries
    while entries and entries[0][0] <= position:
        _, rid, _ = entries.popleft()
        if rid is not None:
            yield delivered.logical, rid
