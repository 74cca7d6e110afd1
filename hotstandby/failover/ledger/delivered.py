"""What one slot of a consumer handed out (or filtered), in the order received: the
:class:`~hotstandby.failover.ledger.ack_tracker.AckTracker`'s record of a slot."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from hotstandby.failover.identity import RecordId

__all__ = ["Delivered", "Handover", "holds"]


class Handover:
    """The slots one logical partition is read from on a cluster (``orders`` and its remote
    copy ``kafka-b.orders`` hand out partition 0 of ``orders``) and which of them handed out
    last: what a commit of one of their records covers in the others (see Delivered.after)."""

    __slots__ = ("last", "members")

    def __init__(self) -> None:
        self.last: Delivered | None = None
        self.members: dict[tuple[str, int], Delivered] = {}


class Delivered:
    """One slot's records handed out (or filtered), in the order received."""

    __slots__ = ("acked", "after", "entries", "given_back", "handed", "handover", "logical", "origins", "released")

    def __init__(self, logical: str, handover: Handover | None = None) -> None:
        self.logical = logical
        self.handover = Handover() if handover is None else handover
        # Where this slot took over its logical partition from its siblings: (the first
        # position it handed out then, the sibling slots' last handed-out positions). A record
        # handed out here at or after that position came after those records of the siblings.
        self.after: list[tuple[int, dict[tuple[str, int], int]]] = []
        # (position, identity or None when filtered or anonymous, timestamp ms)
        self.entries: deque[tuple[int, RecordId | None, int]] = deque()
        self.acked: set[int] = set()  # positions acknowledged out of order, not yet collected
        self.released: set[int] = set()  # positions handed out, then given back (never acknowledged)
        self.origins: dict[int, object] = {}  # position -> where the record was copied from (see offer)
        # A record was given back: it comes again at a later position, so the acknowledged
        # prefix no longer tells which records before a position were all processed.
        self.given_back = False
        self.handed = -1  # the position of the last record handed out (-1: none)

    def took_over(self, position: int) -> None:
        """This slot hands out ``position`` after a sibling handed out last: note what the
        siblings had handed out (only the takeovers after the oldest entry are ever asked for)."""
        handover = self.handover
        handover.last = self
        seen = {slot: d.handed for slot, d in handover.members.items() if d is not self and d.handed >= 0}
        after = self.after
        after.append((position, seen))
        if len(after) > 2 and self.entries:
            oldest = self.entries[0][0]
            drop = 0
            while drop + 1 < len(after) and after[drop + 1][0] <= oldest:
                drop += 1
            del after[:drop]

    def handed_before(self, position: int) -> dict[tuple[str, int], int]:
        """Per sibling slot, its last position handed out before this slot's record at
        ``position``."""
        found: dict[tuple[str, int], int] = {}
        for at, seen in self.after:
            if at > position:
                break
            found = seen
        return found

    def entry_at(self, position: int) -> tuple[int, RecordId | None, int] | None:
        """The entry of the record at ``position`` (entries are in position order), if any."""
        entries = self.entries
        i = bisect_left(entries, position, key=lambda e: e[0])
        return entries[i] if i < len(entries) and entries[i][0] == position else None


def holds(delivered: Delivered | None, position: int, rid: RecordId | None, timestamp_ms: int) -> bool:
    """Whether ``delivered`` handed out this record (same position, identity and timestamp)."""
    entry = None if delivered is None else delivered.entry_at(position)
    return entry is not None and entry[1:] == (rid, timestamp_ms)
