"""Ack ledgers in the config center: ``<ns>/ledgers/<group>/<topic>/<partition>``.

A save is merge and compare-and-put: the stored acknowledgements are united with ours
(acknowledgements only grow, so nothing a previous owner flushed is lost), old sessions are
dropped, and the write succeeds only if the key did not change meanwhile. The store keeps the
last document it wrote or read per key with its revision, so a save needs no read, and the
ledgers of all the partitions a commit covers go in one transaction; a key another member
wrote meanwhile fails the comparison and is read again. A stored generation
higher than ours means a newer owner took the partition over: our acknowledgements are still
merged (records we processed stay processed, and the new owner, which follows the stored
ledgers, skips them), the generation and owner stay the newer owner's, and
:class:`FencedError` tells us that another member owns it now. Flush the ledger before
committing offsets: a ledger ahead of the committed position only filters records, one
behind costs duplicates.

Each write to the config center is timed (``hotstandby_ledger_store_seconds``, by ``op``:
``save`` or ``claim``) and counted when it fails (``hotstandby_ledger_store_failures_total``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.versioned import Versioned, read_many, read_prefix, read_versioned, write_if_unchanged
from hotstandby.errors import ConcurrentUpdateError, FencedError, ValidationError
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger
from hotstandby.logs import get_logger
from hotstandby.metrics.instruments import LEDGER_STORE_FAILURES, LEDGER_STORE_SECONDS

__all__ = ["DEFAULT_SESSION_MAX_AGE_MS", "LedgerStore"]

log = get_logger("hotstandby.ledger")

#: Sessions idle for longer than this are dropped from stored ledgers (7 days).
DEFAULT_SESSION_MAX_AGE_MS = 7 * 24 * 3600 * 1000
_CAS_ATTEMPTS = 5
# etcd refuses a transaction of more than 128 operations (--max-txn-ops) or 1.5 MiB
# (--max-request-bytes) by default: larger writes go in several.
_TXN_KEYS = 128
_TXN_BYTES = 1024 * 1024


def _now_ms() -> int:
    return int(time.time() * 1000)


@contextmanager
def _measured(op: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    except Exception:
        LEDGER_STORE_FAILURES.inc(op=op)
        raise
    finally:
        LEDGER_STORE_SECONDS.observe(time.monotonic() - started, op=op)


class LedgerStore:
    def __init__(self, center: ConfigCenter, *, session_max_age_ms: int = DEFAULT_SESSION_MAX_AGE_MS) -> None:
        self._center = center
        self.session_max_age_ms = session_max_age_ms
        # The last document written or read per key, with its mod revision: a write changes it
        # and compares that revision, so storing a commit's ledgers is one transaction whatever
        # their number; a key another member wrote meanwhile is read again.
        self._known: dict[str, tuple[LedgerDocument, int]] = {}
        self._keys: dict[tuple[str, str, int], str] = {}  # built once: every commit names them all
        self._lock = threading.Lock()

    def key(self, group: str, topic: str, partition: int) -> str:
        try:
            return self._keys[(group, topic, partition)]
        except KeyError:
            key = self._keys[(group, topic, partition)] = self._center.keys.ledger(group, topic, partition)
            return key

    def load(self, group: str, topic: str, partition: int) -> LedgerDocument:
        """The stored ledger (empty, generation -1, if there is none or it is unreadable)."""
        return self._read(self.key(group, topic, partition))

    def load_group(self, group: str) -> dict[tuple[str, int], LedgerDocument]:
        """Every stored ledger of ``group`` by (topic, partition), in one read (a key that names
        no ledger, or an unreadable ledger, is logged and left out)."""
        found = {}
        for stored in read_prefix(self._center, self._center.keys.group_ledgers(group)):
            try:
                topic, partition = self._center.keys.ledger_of(group, stored.key)
                found[(topic, partition)] = LedgerDocument.from_json(stored.value or b"", stored.key)
            except (ValueError, ValidationError) as exc:
                log.error("ledger.rejected", key=stored.key, revision=stored.revision, reason=str(exc))
        return found

    def _read(self, key: str) -> LedgerDocument:
        return self._parse(read_versioned(self._center, key))

    @staticmethod
    def _parse(current: Versioned) -> LedgerDocument:
        if current.value is not None:
            try:
                return LedgerDocument.from_json(current.value, current.key)
            except ValidationError as exc:
                log.error("ledger.rejected", key=current.key, revision=current.revision, reason=str(exc))
        return LedgerDocument(PartitionLedger())

    def claim(self, group: str, topic: str, partition: int, *, owner: str) -> LedgerDocument:
        """Take a partition's ledger over: store it under the next generation and return it.
        Writes by earlier owners (lower generations) are refused from then on."""

        def claimed(stored: LedgerDocument) -> LedgerDocument:
            return LedgerDocument(stored.ledger.copy(), generation=stored.generation + 1, owner=owner,
                                  updated_at_ms=_now_ms())  # fmt: skip

        key = self.key(group, topic, partition)
        (_, doc) = self._write({key: claimed}, "claim")[key]
        log.info("ledger.claimed", key=key, generation=doc.generation, owner=owner, records=len(doc.ledger))
        return doc

    def save(
        self, group: str, topic: str, partition: int, ledger: PartitionLedger, *, generation: int, owner: str
    ) -> LedgerDocument:
        """Merge ``ledger`` into the stored one under ``generation``; returns what was written.
        :class:`FencedError` when a newer generation owns the partition (ours merged all the same)."""
        key = self.key(group, topic, partition)
        claimed = self.save_all(group, {(topic, partition): (ledger, generation)}, owner=owner)
        if claimed[(topic, partition)] > generation:
            stored = self._known_doc(key)
            raise FencedError(
                f"{key}: generation {stored.generation} (owner {stored.owner!r}) is newer than ours "
                f"({generation}); our acknowledgements were merged"
            )
        return self._known_doc(key)

    def save_all(
        self, group: str, ledgers: Mapping[tuple[str, int], tuple[PartitionLedger, int]], *, owner: str
    ) -> dict[tuple[str, int], int]:
        """Merge each ``(topic, partition) -> (ledger, generation)`` into the stored ledger, all
        in one transaction; returns, per partition, the generation of the stored ledger ours was
        merged into. Where it is newer than ours, another claim owns the partition: its
        generation and owner are kept."""
        now = _now_ms()
        keys = {self.key(group, topic, partition): (topic, partition) for topic, partition in ledgers}
        dropped: dict[str, int] = {}

        def merging(key: str) -> Callable[[LedgerDocument], LedgerDocument]:
            ours, generation = ledgers[keys[key]]

            def merged(stored: LedgerDocument) -> LedgerDocument:
                fenced = stored.generation > generation
                ledger = stored.ledger.copy()
                ledger.merge(ours)
                dropped[key] = len(ledger.gc(self.session_max_age_ms, now))
                return LedgerDocument(ledger, generation=stored.generation if fenced else generation,
                                      owner=stored.owner if fenced else owner, updated_at_ms=now)  # fmt: skip

            return merged

        written = self._write({key: merging(key) for key in keys}, "save")
        claimed = {}
        for key, (stored, doc) in written.items():
            claimed[keys[key]] = stored.generation
            log.debug("ledger.flushed", key=key, generation=doc.generation, records=len(doc.ledger),
                      dropped=dropped.get(key, 0))  # fmt: skip
        return claimed

    @property
    def remembered(self) -> int:
        """How many ledgers' last documents the store keeps (one per partition owned)."""
        with self._lock:
            return len(self._known)

    def forget(self, group: str, partitions: Iterable[tuple[str, int]]) -> None:
        """Drop what is known of these ledgers (partitions no longer ours): the cache holds only
        the partitions a member owns, and a later write reads the key again first."""
        with self._lock:
            for topic, partition in partitions:
                key = self._keys.pop((group, topic, partition), None)
                if key is not None:
                    self._known.pop(key, None)

    def _known_doc(self, key: str) -> LedgerDocument:
        with self._lock:
            return self._known[key][0]

    def _write(
        self, changes: Mapping[str, Callable[[LedgerDocument], LedgerDocument]], op: str
    ) -> dict[str, tuple[LedgerDocument, LedgerDocument]]:
        """Write ``change(stored)`` for every key, in one transaction per ``_TXN_KEYS`` keys that
        compares each key's revision; when another writer got there first, read those keys
        again and retry. Returns per key (the stored document it changed, the document written)."""
        keys = sorted(changes)
        out: dict[str, tuple[LedgerDocument, LedgerDocument]] = {}
        with _measured(op):
            for i in range(0, len(keys), _TXN_KEYS):
                out.update(self._write_together(keys[i : i + _TXN_KEYS], changes))
        return out

    def _write_together(
        self, keys: list[str], changes: Mapping[str, Callable[[LedgerDocument], LedgerDocument]]
    ) -> dict[str, tuple[LedgerDocument, LedgerDocument]]:
        for _ in range(_CAS_ATTEMPTS):
            current = self._current(keys)
            written = {key: changes[key](current[key][0]) for key in keys}
            payloads = {key: written[key].to_json().encode() for key in keys}
            if len(keys) > 1 and sum(map(len, payloads.values())) > _TXN_BYTES:
                half = len(keys) // 2
                return {**self._write_together(keys[:half], changes), **self._write_together(keys[half:], changes)}
            revisions = write_if_unchanged(self._center, {key: current[key][1] for key in keys}, payloads)
            with self._lock:
                for key in keys:
                    if revisions is None:
                        self._known.pop(key, None)  # written by another member: read it again
                    else:
                        self._known[key] = (written[key], revisions[key])
            if revisions is not None:
                return {key: (current[key][0], written[key]) for key in keys}
        raise ConcurrentUpdateError(f"{keys[0]} and {len(keys) - 1} more: changed {_CAS_ATTEMPTS} times while "
                                    f"writing; try again")  # fmt: skip

    def _current(self, keys: list[str]) -> dict[str, tuple[LedgerDocument, int]]:
        """Each key's document and revision: as last written or read, else read now (together)."""
        with self._lock:
            current = {key: self._known[key] for key in keys if key in self._known}
        missing = [key for key in keys if key not in current]
        if missing:
            for key, stored in read_many(self._center, missing).items():
                current[key] = (self._parse(stored), stored.revision)
        return current
