"""What one slot of a consumer handed out (or filtered), in the order received: the
:class:`~hotstandby.failover.ack_tracker.AckTracker`'s record of a slot."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from hotstandby.failover.identity import RecordId

__all__ = ["Delivered", "holds"]


class Delivered:
    """One slot's records handed out (or filtered), in the order received."""

    __slots__ = ("acked", "entries", "given_back", "handed", "logical", "origins", "released")

    def __init__(self, logical: str) -> None:
        self.logical = logical
        # (position, identity or None when filtered or anonymous, timestamp ms)
        self.entries: deque[tuple[int, RecordId | None, int]] = deque()
        self.acked: set[int] = set()  # positions acknowledged out of order, not yet collected
        self.released: set[int] = set()  # positions handed out, then given back (never acknowledged)
        self.origins: dict[int, object] = {}  # position -> where the record was copied from (see offer)
        # A record was given back: it comes again at a later position, so the acknowledged
        # prefix no longer tells which records before a position were all processed.
        self.given_back = False
        self.handed = -1  # the position of the last record handed out (-1: none)

    def entry_at(self, position: int) -> tuple[int, RecordId | None, int] | None:
        """The entry of the record at ``position`` (entries are in position order), if any."""
        entries = self.entries
        i = bisect_left(entries, position, key=lambda e: e[0])
        return entries[i] if i < len(entries) and entries[i][0] == position else None


def holds(delivered: Delivered | None, position: int, rid: RecordId | None, timestamp_ms: int) -> bool:
    """Whether ``delivered`` handed out this record (same position, identity and timestamp)."""
    entry = None if delivered is None else delivered.entry_at(position)
    return entry is not None and entry[1:] == (rid, timestamp_ms)
