"""A group member's ledgers in the config center, for groups whose broker assigns the
partitions: claimed as partitions are assigned, stored as records are acknowledged — and kept
working while the config center is unreachable.

* A ledger is *claimed* when its partition is assigned (a higher generation fences the previous
  owner's writes). A claim that fails (etcd unreachable) is retried; until it succeeds the
  consumer hands out nothing of that partition, since it cannot know what the previous owner
  stored.
* Acknowledged ledgers are *dirty* until stored. Every dirty ledger is stored, owned or not:
  a commit that returned covers its records whoever owns the partition now (saves merge; the
  owner follows the stored ledgers and skips them). A ledger this member does not own is saved
  under generation -1, so it never takes the ownership.
* An acknowledgement is *late* when another member claimed its partition after this member
  handed the record out (between the two, that member may have handed out its copy): the
  acknowledgement is merged all the same, but it does not promise the record is not delivered
  again, and a synchronous commit says so (:meth:`take_late`). Claims made by this member
  itself in between do not make it late: its own filter holds the acknowledgement.
* While etcd is unreachable acknowledgements stay in the local ledgers (which filter what this
  member reads) and are stored when it answers again: :meth:`store` without a deadline tries
  at most once per second, with one it retries until the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from hotstandby.configcenter.call_deadline import calls_until
from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import ConcurrentUpdateError, ConfigCenterError
from hotstandby.failover.ledger.ack_tracker import AckTracker, LedgerKey
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.logs import get_logger

__all__ = ["RETRY_S", "Ledgers"]

log = get_logger("hotstandby.ledger")

# After a failed attempt, attempts without a deadline (auto commit, asynchronous commits, polls)
# wait this long: an unreachable etcd must not slow every poll down.
RETRY_S = 1.0
_STORE_ERRORS = (ConfigCenterError, ConcurrentUpdateError)
# Claims of a partition one member remembers as its own: a late acknowledgement that many
# generations old counts as late whoever claimed in between.
_CLAIMS_KEPT = 64


class Ledgers:
    """Ownership and storing of one consumer's ledgers (see the module doc)."""

    def __init__(self, store: LedgerStore, acks: AckTracker, *, group: str, owner: str) -> None:
        self._store = store
        self._acks = acks
        self.group = group
        self.owner = owner
        self.generations: dict[LedgerKey, int] = {}
        self.owned: set[LedgerKey] = set()  # claimed for the current assignment
        self.unclaimed: set[LedgerKey] = set()  # assigned, claim not done yet (etcd unreachable)
        self.fenced: set[LedgerKey] = set()  # owned, but claimed by another member since
        self.dirty: set[LedgerKey] = set()  # acknowledgements not stored yet
        self.in_flight: set[LedgerKey] = set()  # being stored without the owner's lock (take/finish)
        # Per dirty ledger, the oldest generation one of its acknowledged records was handed out
        # under (-1: before anyone claimed it), to tell a late acknowledgement; the in-flight
        # ones' apart.
        self._handed_under: dict[LedgerKey, int] = {}
        self._in_flight_under: dict[LedgerKey, int] = {}
        self._left_generations: dict[LedgerKey, int] = {}  # as they were at the last switch
        self._claims: dict[LedgerKey, set[int]] = {}  # generations this member claimed, recent ones
        # Stored late by the last store on the caller's thread (:meth:`store`), for the
        # synchronous commit that made it; the commit thread's late stores are only logged.
        self.late: set[LedgerKey] = set()
        self._retry_at = 0.0
        self._failing = False

    # -- ownership ------------------------------------------------------------------------

    def claim(self, keys: set[LedgerKey]) -> set[LedgerKey]:
        """Claim the ledgers of newly assigned partitions; returns those claimed now (the
        others are retried by :meth:`retry_claims`)."""
        self.unclaimed |= keys - self.owned
        return self.retry_claims(force=True)

    def retry_claims(self, *, force: bool = False) -> set[LedgerKey]:
        done: set[LedgerKey] = set()
        if not self.unclaimed or not (force or time.monotonic() >= self._retry_at):
            return done
        for topic, partition in sorted(self.unclaimed):
            try:
                doc = self._store.claim(self.group, topic, partition, owner=self.owner)
            except _STORE_ERRORS as exc:
                self._failed("ledger.claim_failed", exc)
                break
            key = (topic, partition)
            self._acks.merge(key, doc.ledger)
            self.generations[key] = doc.generation
            ours = self._claims.setdefault(key, set())
            ours.add(doc.generation)
            ours.difference_update([g for g in ours if g < doc.generation - _CLAIMS_KEPT])
            self.owned.add(key)
            self.fenced.discard(key)
            done.add(key)
        self.unclaimed -= done
        return done

    def release(self, keys: set[LedgerKey]) -> None:
        """The partitions were revoked: their ledgers are no longer ours (what is dirty is
        still stored, merged into the new owner's)."""
        self.owned -= keys
        self.unclaimed -= keys
        self._store.forget(self.group, keys)

    def reset(self) -> None:
        """A switch: partitions are claimed again as the new cluster assigns them. Records
        handed out before it and acknowledged after it were handed out under the generations
        held now."""
        self._left_generations = dict(self.generations)
        self.owned.clear()
        self.unclaimed.clear()

    def acknowledged(self, keys: Iterable[LedgerKey], *, left_behind: bool = False) -> None:
        """These ledgers hold new acknowledgements (to store): of records handed out under the
        generations held now, or before the last switch (``left_behind``)."""
        held = self._left_generations if left_behind else self.generations
        for key in keys:
            under = held.get(key, -1)
            self._handed_under[key] = min(under, self._handed_under.get(key, under))
            self.dirty.add(key)

    def take_late(self, keys: Iterable[LedgerKey]) -> set[LedgerKey]:
        """Which of ``keys`` the last :meth:`store` stored late (see the module doc)."""
        late = self.late.intersection(keys)
        self.late -= late
        return late

    # -- storing --------------------------------------------------------------------------

    def store(self, keys: set[LedgerKey], *, deadline: float | None = None) -> bool:
        """Store ``keys`` and every ledger still dirty; True when nothing is left unstored.
        Without ``deadline`` one attempt (none within a second of a failed one); with one,
        attempts until it passes."""
        self.acknowledged(keys)
        self.late = set()
        if deadline is None:
            return self._attempt(force=False)
        with calls_until(deadline):  # no call of an attempt outlasts it
            return wait_until(lambda: self._attempt(force=True), deadline - time.monotonic(), first=0.1, most=0.1)

    def _attempt(self, *, force: bool) -> bool:
        if not self.dirty:
            return True
        if not force and time.monotonic() < self._retry_at:
            return False
        # What a background store is writing too: whoever calls this must find it stored after.
        dirty = sorted(self.dirty | self.in_flight)
        try:
            claimed = self._store.save_all(self.group, self._versions(dirty, copy=False), owner=self.owner)
        except _STORE_ERRORS as exc:
            self._failed("ledger.store_failed", exc)
            return False
        under = {key: self._handed_under.pop(key) for key in dirty if key in self._handed_under}
        under.update((key, min(g, under.get(key, g))) for key, g in self._in_flight_under.items())
        self.late = self._stored(claimed, dirty, under)
        self.dirty.difference_update(dirty)
        return True

    def _versions(self, keys: list[LedgerKey], *, copy: bool) -> dict[LedgerKey, tuple[PartitionLedger, int]]:
        """Each ledger with the generation to store it under (-1: not ours, merged only)."""
        return {key: (self._acks.ledger(key).copy() if copy else self._acks.ledger(key),
                      self.generations.get(key, 0) if key in self.owned else -1)
                for key in keys}  # fmt: skip

    def _stored(
        self, claimed: Mapping[LedgerKey, int], written: Iterable[LedgerKey], under: Mapping[LedgerKey, int]
    ) -> set[LedgerKey]:
        """After a write: forget, log and return what was stored late, note what was fenced."""
        # The store remembers what it wrote; of partitions no longer ours it need not.
        self._store.forget(self.group, [key for key in written if key not in self.owned and key not in self.unclaimed])
        late = {key for key, generation in under.items() if self._claimed_by_another(key, generation, claimed[key])}
        if late:
            log.warning("ledger.acknowledged_late", group=self.group, partitions=sorted(late))
        fenced = {key for key, generation in claimed.items() if generation > self.generations.get(key, -1)}
        # Merged into another member's ledger. For a partition the broker still has assigned to
        # us (a rebalance or a switch in progress) we keep storing until it is revoked; for one
        # we do not own this is what was intended.
        for key in sorted(fenced & self.owned - self.fenced):
            self.fenced.add(key)
            log.warning("ledger.fenced", topic=key[0], partition=key[1], generation=self.generations.get(key, 0))
        if self._failing:
            self._failing = False
            log.info("ledger.stored_again", group=self.group)
        return late

    def _claimed_by_another(self, key: LedgerKey, handed_under: int, stored: int) -> bool:
        """Whether a generation after ``handed_under``, up to the ``stored`` one, is another
        member's claim."""
        if stored - handed_under > _CLAIMS_KEPT:
            return True
        ours = self._claims.get(key, set())
        return any(generation not in ours for generation in range(handed_under + 1, stored + 1))

    # -- storing without the consumer's lock ----------------------------------------------

    def take(self) -> dict[LedgerKey, tuple[PartitionLedger, int]] | None:
        """Under the owner's lock: copies of the dirty ledgers, for :meth:`write` without the
        lock, then :meth:`finish` under it again; None when nothing is to be stored, or not
        yet (a second after a failure). They count as in flight meanwhile: :meth:`store` writes
        them too."""
        if not self.dirty or time.monotonic() < self._retry_at:
            return None
        batch = self._versions(sorted(self.dirty), copy=True)
        self.in_flight.update(batch)
        for key in batch:
            if key in self._handed_under:
                under = self._handed_under.pop(key)
                self._in_flight_under[key] = min(under, self._in_flight_under.get(key, under))
        self.dirty.clear()
        return batch

    def write(self, batch: Mapping[LedgerKey, tuple[PartitionLedger, int]]) -> dict[LedgerKey, int] | Exception:
        """Store ``batch`` (taken by :meth:`take`); needs no lock. The generations it was merged
        into, or the error."""
        try:
            return self._store.save_all(self.group, batch, owner=self.owner)
        except _STORE_ERRORS as exc:
            return exc

    def finish(
        self, batch: Mapping[LedgerKey, tuple[PartitionLedger, int]], outcome: dict[LedgerKey, int] | Exception
    ) -> bool:
        """Under the owner's lock again: what :meth:`write` did. A batch not stored is dirty again."""
        self.in_flight.difference_update(batch)
        under = {key: self._in_flight_under.pop(key) for key in batch if key in self._in_flight_under}
        if isinstance(outcome, Exception):
            self.dirty.update(batch)
            for key, generation in under.items():
                self._handed_under[key] = min(generation, self._handed_under.get(key, generation))
            self._failed("ledger.store_failed", outcome)
            return False
        self._stored(outcome, batch, under)
        return True

    def _failed(self, event: str, exc: Exception) -> None:
        """Log once per outage; no attempt without a deadline for a while."""
        self._retry_at = time.monotonic() + RETRY_S
        if not self._failing:
            self._failing = True
            log.warning(event, group=self.group, dirty=len(self.dirty), error=str(exc))
