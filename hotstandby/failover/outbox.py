"""The producer's outbox: what a switch must send to the new cluster, one rule for every system.

A record is *pending* from the moment the producer hands it to its client until the cluster
acknowledges it. Acknowledged, it enters the *replay window*, stamped with the time of that
acknowledgement, and stays while it is younger than ``hotstandby.replay.window.ms`` and the
window holds at most ``hotstandby.replay.window.bytes`` (oldest out first): an acknowledgement
does not prove that replication copied the record before the cluster failed.

On a switch (:meth:`Outbox.replay`) the records to send again are every pending record and
every window record, less the window records that replication provably copied to the new
cluster (:func:`replicated`; only adapters that can read replication's position report it)
and less those the new cluster acknowledged itself before and still holds (a producer back on
a cluster it left: see :meth:`Outbox.replay`), in key order (topic, partition, sequence). All of them are pending again, and a re-sent window
record is a *replay*: when the new cluster acknowledges it, it enters the window anew with
that time, so it is protected against the loss of the new cluster as any record acknowledged
there. A record the cluster refuses leaves the outbox (the application hears of the failure);
a refused replay goes back into the window instead, because the application was told long ago
that it was stored. The application's own limit counts its pending records, never the replays.
Records of a transaction the producer aborted are forgotten (:meth:`Outbox.forget`): pending or
in the window, they are never sent again.

Not thread-safe: the producer's lock guards it. :meth:`Outbox.add` is one dict assignment, so a
producer may call it under a narrower lock than the acknowledgement path.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

__all__ = ["Outbox", "Replay", "ReplicatedTo", "Stored", "replicated"]

K = TypeVar("K", bound=tuple[Any, ...])
R = TypeVar("R")


class Stored(NamedTuple):
    """Where a cluster acknowledged a record: cluster, topic, partition, offset, and when
    (wall-clock milliseconds). A named tuple: one is made per record acknowledged (or per run
    of records acknowledged together).

    ``span``: the offset is an upper bound, the record lies at most this far before it (0: the
    offset is exact). A record acknowledged through a later record's report (the Kafka
    producer's quiet path) knows only that it lies after the previous report's offset."""

    cluster: str
    topic: str
    partition: int
    offset: int
    acked_ms: int
    span: int = 0

    @property
    def lowest(self) -> int:
        """The lowest offset the record can have."""
        return self.offset - self.span


@dataclass(frozen=True, slots=True)
class ReplicatedTo:
    """Replication's position for one source partition, read on the target: the last source
    offset copied and acknowledged there, and when that position was written (wall clock)."""

    offset: int
    written_ms: int
    #: Proven by a copy of the producer's own message: its records there up to ``offset`` that
    #: the source acknowledged by this time (the producer's clock, no skew) are copied.
    own_acked_ms: int | None = None


def replicated(stored: Stored, source: str, positions: Mapping[tuple[str, int], ReplicatedTo], skew_ms: int) -> bool:
    """Whether ``positions`` (replication ``source`` -> the new cluster) prove ``stored`` copied.

    Offsets alone cannot tell a source that came back empty (and counts from zero again) from
    the one that acknowledged the record, so a position counts only when written after the
    acknowledgement by more than the clock-skew margin ``skew_ms``: a position written before
    the source restarted is older than every record the restarted source acknowledged."""
    if stored.cluster != source:
        return False
    position = positions.get((stored.topic, stored.partition))
    if position is None or stored.offset > position.offset:
        return False
    if position.own_acked_ms is not None:  # acknowledged in order, before the copy's own message
        return stored.acked_ms <= position.own_acked_ms
    return stored.acked_ms + skew_ms < position.written_ms


@dataclass(frozen=True, slots=True)
class Replay(Generic[R]):
    """What a switch sends again, in order; how many window records replication had copied
    (``trimmed``), and how many the new cluster held from before (``held``, kept in the window)."""

    records: list[R]
    trimmed: int
    held: int = 0


# A window record: acknowledged at, size, key, record, where stored, where else stored.
_Entry = tuple[float, int, K, R, "Stored | None", "Stored | None"]


class Outbox(Generic[K, R]):
    """Pending records and the replay window of one producer (see the module doc).

    The window keeps times, sizes, keys, records and where they were stored side by side
    rather than as a tuple per record: it holds up to a minute of records, and a tuple holding
    a record the garbage collector tracks is walked on every collection of its generation."""

    def __init__(self, max_age_ms: int, max_bytes: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._max_age_s = max_age_ms / 1000
        self._max_bytes = max_bytes
        self._pending: dict[K, R] = {}
        self._replays: set[K] = set()  # pending keys re-sent from the window
        self._at: deque[float] = deque()  # acknowledged at (clock)
        self._sizes: deque[int] = deque()
        self._keys: deque[K] = deque()
        self._records: deque[R] = deque()
        self._stored: deque[Stored | None] = deque()
        # Where else a window record was acknowledged: the cluster the producer sent it to
        # before a switch re-sent it (None: nowhere else known).
        self._also: deque[Stored | None] = deque()
        self._earlier: dict[K, Stored] = {}  # re-sent window records: where they were stored
        self.window_bytes = 0
        self.replay_failures = 0  # replays the new cluster refused (back in the window)

    # -- the record's way -----------------------------------------------------------------

    def add(self, key: K, record: R) -> None:
        """``record`` was handed to the client: pending until acknowledged or refused."""
        self._pending[key] = record

    def withdraw(self, key: K) -> None:
        """``record`` was never handed over after all (the client refused it at once)."""
        self._pending.pop(key, None)

    def acknowledged(self, key: K, size: int, stored: Stored | None = None) -> bool:
        """The cluster acknowledged ``key`` (``stored``: where, when the adapter knows); it
        enters the window. False when it was not pending (already acknowledged or refused)."""
        record = self._pending.pop(key, None)
        if record is None:
            return False
        also = None
        if self._replays:
            self._replays.discard(key)
            also = self._earlier.pop(key, None)
        self._enter_window(key, record, size, stored, also)
        return True

    def refused(self, key: K, size: int) -> bool:
        """The cluster refused ``key`` for good. Returns whether it was a replay (which goes
        back into the window; the caller reports it, the application was told it was stored)."""
        record = self._pending.pop(key, None)
        if record is None or key not in self._replays:
            return False
        self._replays.discard(key)
        self.replay_failures += 1
        self._enter_window(key, record, size, None, self._earlier.pop(key, None))
        return True

    def forget(self, keys: Iterable[K]) -> int:
        """Drop ``keys`` for good, pending or in the window (records of an aborted transaction:
        the cluster discards them, and a switch must not send them again). Returns how many
        were found."""
        left = set(keys)
        found = 0
        for key in list(left):
            if self._pending.pop(key, None) is not None:
                self._replays.discard(key)
                self._earlier.pop(key, None)
                left.discard(key)
                found += 1
        # A transaction's records were acknowledged after everything before it: they are the
        # newest of the window, so the walk stops near its end (the whole window only when a
        # key aged out of it already).
        kept: list[_Entry[K, R]] = []
        while left and self._keys:
            entry = self._pop_newest()
            if entry[2] in left:
                left.discard(entry[2])
                self.window_bytes -= entry[1]
                found += 1
            else:
                kept.append(entry)
        for entry in reversed(kept):
            self._append(entry)
        return found

    def _pop_newest(self) -> _Entry[K, R]:
        return (self._at.pop(), self._sizes.pop(), self._keys.pop(), self._records.pop(), self._stored.pop(),
                self._also.pop())  # fmt: skip

    def _append(self, entry: _Entry[K, R]) -> None:
        at, size, key, record, stored, also = entry
        self._at.append(at)
        self._sizes.append(size)
        self._keys.append(key)
        self._records.append(record)
        self._stored.append(stored)
        self._also.append(also)

    def _enter_window(self, key: K, record: R, size: int, stored: Stored | None, also: Stored | None) -> None:
        now = self._clock()
        at = self._at
        at.append(now)
        self._sizes.append(size)
        self._keys.append(key)
        self._records.append(record)
        self._stored.append(stored)
        self._also.append(also)
        self.window_bytes += size
        if at[0] < now - self._max_age_s or self.window_bytes > self._max_bytes:
            horizon = now - self._max_age_s
            while at and (at[0] < horizon or self.window_bytes > self._max_bytes):
                at.popleft()
                self._keys.popleft()
                self._records.popleft()
                self._stored.popleft()
                self._also.popleft()
                self.window_bytes -= self._sizes.popleft()

    # -- a switch -------------------------------------------------------------------------

    def replay(
        self,
        source: str = "",
        positions: Mapping[tuple[str, int], ReplicatedTo] | None = None,
        skew_ms: int = 0,
        held: Callable[[Stored], bool] | None = None,
    ) -> Replay[R]:
        """Empty the window into pending and return what to send again, in key order: every
        pending record and every window record that ``positions`` (replication ``source`` ->
        the new cluster; none: nothing is proven copied) do not show copied — except those
        the new cluster acknowledged before (a switch away re-sent them) and, by ``held``,
        still holds where it acknowledged them. Those stay in the window, as acknowledged
        there: a producer flipped back and forth sends a record to each cluster once."""
        trimmed = 0
        kept: list[_Entry[K, R]] = []
        for entry in zip(self._at, self._sizes, self._keys, self._records, self._stored, self._also, strict=True):
            _, _, key, record, stored, also = entry
            if positions and stored is not None and replicated(stored, source, positions, skew_ms):
                trimmed += 1
                continue
            if held is not None and also is not None and held(also):
                kept.append((entry[0], entry[1], key, record, also, stored))
                continue
            if key not in self._pending:  # a window record sent again since stays pending once
                self._pending[key] = record
                self._replays.add(key)
                earlier = stored if stored is not None else also  # a refused replay was stored nowhere new
                if earlier is not None:
                    self._earlier[key] = earlier
        self._at.clear()
        self._sizes.clear()
        self._keys.clear()
        self._records.clear()
        self._stored.clear()
        self._also.clear()
        self.window_bytes = 0
        for entry in kept:
            self._append(entry)
            self.window_bytes += entry[1]
        return Replay([self._pending[key] for key in sorted(self._pending)], trimmed, len(kept))

    def pending_records(self) -> list[R]:
        """The records waiting for an acknowledgement, in key order: what a new connection to
        the same cluster sends again when the one in use failed for good."""
        return [self._pending[key] for key in sorted(self._pending)]

    def stored_on(self, cluster: str) -> dict[tuple[str, int], tuple[int, int]]:
        """Per (topic, partition), the lowest and highest offsets (span included) of the window
        records that ``cluster`` acknowledged before a switch re-sent them: what a switch back to
        ``cluster`` checks is still there (see :meth:`replay`)."""
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for also in self._also:
            if also is not None and also.cluster == cluster:
                slot = (also.topic, also.partition)
                low, high = out.get(slot, (also.lowest, also.offset))
                out[slot] = (min(low, also.lowest), max(high, also.offset))
        return out

    # -- counts ---------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Records waiting for an acknowledgement, replays included."""
        return len(self._pending)

    @property
    def own_pending(self) -> int:
        """The application's records waiting for an acknowledgement (what its limit counts)."""
        return len(self._pending) - len(self._replays)

    @property
    def replaying(self) -> int:
        """Window records sent again and not acknowledged by the new cluster yet."""
        return len(self._replays)

    @property
    def in_window(self) -> int:
        """Records in the replay window."""
        return len(self._records)

    def window(self) -> Iterator[R]:
        """The replay window's records, oldest acknowledgement first."""
        return iter(self._records)

    def window_stored(self) -> Iterator[tuple[K, R, Stored | None]]:
        """The replay window's keys and records with where they were stored last, oldest
        acknowledgement first."""
        return zip(self._keys, self._records, self._stored, strict=True)
