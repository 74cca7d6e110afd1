"""What a drill saw, counted as it happens (thread-safe): every record is a sequence number.

A record is *produced* when the broker acknowledged it to the producer, *consumed* when a
consumer acknowledged it (committed it, or returned it with auto commit). It is **lost** when
produced and never consumed, **duplicated** when delivered again after it was consumed. A record
delivered again before it was acknowledged (a manual committer's uncommitted records at a
switch) is *redelivered*: the at-least-once contract, not a duplicate. A record whose commit was
refused (another member took its partition over first, as Kafka refuses a commit from an older
generation) was processed all the same: it is not lost, and it may come again once, redelivered.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from hotstandby.drill.seq_set import SeqSet
from hotstandby.logs import get_logger

__all__ = ["Event", "SwitchMark", "Tally"]

log = get_logger("hotstandby.drill")

_SAMPLE = 20


@dataclass
class SwitchMark:
    """One route flip: when it happened and when the first record was consumed on ``to``."""

    source: str
    to: str
    at: float = field(default_factory=time.monotonic)
    killed: bool = False
    first_consumed: float | None = None
    duplicated: int = 0  # records delivered again after they were consumed, from this flip to the next

    @property
    def latency_ms(self) -> float | None:
        return None if self.first_consumed is None else round((self.first_consumed - self.at) * 1000, 1)


@dataclass(frozen=True)
class Event:
    """Something the drill did to the clusters (``kill``, ``restart``), ``at`` seconds into it."""

    at: float
    kind: str
    what: str


class Tally:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.per_second: dict[tuple[int, str], int] = {}  # (second, cluster) -> records consumed
        self.events: list[Event] = []
        # Bitmaps: an hour-long soak counts hundreds of thousands of records (seq_set.py).
        self.produced = SeqSet()
        self.failed = SeqSet()
        self.consumed = SeqSet()
        self._both = 0  # produced and consumed: kept as they change, counts() is polled often
        self._outstanding: set[int] = set()  # received, not yet acknowledged
        self._refused: set[int] = set()  # processed, their commit refused: may come again once
        self.deliveries = 0
        self.duplicated = 0
        self.duplicated_sample: list[int] = []  # the first duplicates, to look for in the logs
        self.redelivered = 0
        self.switches: list[SwitchMark] = []

    def delivered(self, seq: int, ok: bool) -> None:
        """The producer's delivery report for ``seq``."""
        with self._lock:
            if not ok:
                self.failed.add(seq)
            elif self.produced.add(seq) and seq in self.consumed:
                self._both += 1

    def received(self, seq: int, cluster: str | None) -> None:
        """A consumer was handed ``seq`` from ``cluster`` (None: it moved while receiving, so
        the record may come from either; it then marks no switch as done)."""
        now = time.monotonic()
        with self._lock:
            self.deliveries += 1
            second = (int(now - self.started), cluster or "?")
            self.per_second[second] = self.per_second.get(second, 0) + 1
            if seq in self._refused:
                self._refused.discard(seq)
                self._outstanding.add(seq)
                self.redelivered += 1
            elif seq in self.consumed:
                self.duplicated += 1
                if self.switches:
                    self.switches[-1].duplicated += 1
                if len(self.duplicated_sample) < _SAMPLE:
                    self.duplicated_sample.append(seq)
                    since = self.switches[-1].at if self.switches else None
                    log.warning("drill.duplicate", seq=seq, cluster=cluster,
                                since_flip_ms=None if since is None else round((now - since) * 1000))  # fmt: skip
            elif seq in self._outstanding:
                self.redelivered += 1
            else:
                self._outstanding.add(seq)
            for mark in self.switches:
                if mark.first_consumed is None and mark.to == cluster:
                    mark.first_consumed = now

    def acknowledged(self, seqs: list[int]) -> None:
        with self._lock:
            for seq in seqs:
                self._outstanding.discard(seq)
                if self.consumed.add(seq) and seq in self.produced:
                    self._both += 1

    def refused(self, seqs: list[int]) -> None:
        """Processed, but their commit was refused (see the module doc)."""
        self.acknowledged(seqs)
        with self._lock:
            self._refused.update(seqs)

    def withdrawn(self, seqs: list[int]) -> None:
        """The acknowledgement of ``seqs`` no longer holds (a sink overwrote the batch that
        held them without them): they count as lost unless they are consumed again."""
        with self._lock:
            for seq in seqs:
                if self.consumed.discard(seq) and seq in self.produced:
                    self._both -= 1

    def flip(self, source: str, to: str, *, killed: bool = False) -> SwitchMark:
        mark = SwitchMark(source, to, killed=killed)
        with self._lock:
            self.switches.append(mark)
        return mark

    def event(self, kind: str, what: str) -> None:
        with self._lock:
            self.events.append(Event(round(time.monotonic() - self.started, 2), kind, what))

    def counts(self) -> tuple[int, int]:
        """(produced, consumed of those) right now."""
        with self._lock:
            return len(self.produced), self._both

    def lost(self) -> list[int]:
        with self._lock:
            return list(self.produced - self.consumed)  # ascending
