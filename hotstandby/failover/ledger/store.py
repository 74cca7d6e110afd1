"""Ack ledgers in the config center: ``<ns>/ledgers/<group>/<topic>/<partition>``.

A save is read, merge, compare-and-put: the stored acknowledgements are united with ours
(acknowledgements only grow, so nothing a previous owner flushed is lost), old sessions are
dropped, and the write succeeds only if the key did not change meanwhile. A stored generation
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

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.versioned import Versioned, read_prefix, read_versioned, update_versioned
from hotstandby.errors import FencedError, ValidationError
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger
from hotstandby.logs import get_logger
from hotstandby.metrics.instruments import LEDGER_STORE_FAILURES, LEDGER_STORE_SECONDS

__all__ = ["DEFAULT_SESSION_MAX_AGE_MS", "LedgerStore"]

log = get_logger("hotstandby.ledger")

#: Sessions idle for longer than this are dropped from stored ledgers (7 days).
DEFAULT_SESSION_MAX_AGE_MS = 7 * 24 * 3600 * 1000
_CAS_ATTEMPTS = 5


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


def _update(center: ConfigCenter, key: str, change: Callable[[Versioned], bytes], op: str) -> None:
    with _measured(op):
        update_versioned(center, key, change, attempts=_CAS_ATTEMPTS)


class LedgerStore:
    def __init__(self, center: ConfigCenter, *, session_max_age_ms: int = DEFAULT_SESSION_MAX_AGE_MS) -> None:
        self._center = center
        self.session_max_age_ms = session_max_age_ms

    def key(self, group: str, topic: str, partition: int) -> str:
        return self._center.keys.ledger(group, topic, partition)

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
        key = self.key(group, topic, partition)
        written: list[LedgerDocument] = []

        def claimed(current: Versioned) -> bytes:
            stored = self._parse(current)
            doc = LedgerDocument(stored.ledger, generation=stored.generation + 1, owner=owner, updated_at_ms=_now_ms())
            written[:] = [doc]
            return doc.to_json().encode()

        _update(self._center, key, claimed, "claim")
        doc = written[0]
        log.info("ledger.claimed", key=key, generation=doc.generation, owner=owner, records=len(doc.ledger))
        return doc

    def save(
        self, group: str, topic: str, partition: int, ledger: PartitionLedger, *, generation: int, owner: str
    ) -> LedgerDocument:
        """Merge ``ledger`` into the stored one under ``generation``; returns what was written."""
        key = self.key(group, topic, partition)
        written: list[tuple[LedgerDocument, LedgerDocument, int]] = []  # (written, stored, dropped)

        def merged(current: Versioned) -> bytes:
            stored = self._parse(current)
            fenced = stored.generation > generation
            ledger_now = stored.ledger
            ledger_now.merge(ledger)
            now = _now_ms()
            dropped = ledger_now.gc(self.session_max_age_ms, now)
            doc = LedgerDocument(ledger_now, generation=stored.generation if fenced else generation,
                                 owner=stored.owner if fenced else owner, updated_at_ms=now)  # fmt: skip
            written[:] = [(doc, stored, len(dropped))]
            return doc.to_json().encode()

        _update(self._center, key, merged, "save")
        doc, stored, dropped = written[0]
        if stored.generation > generation:
            raise FencedError(
                f"{key}: generation {stored.generation} (owner {stored.owner!r}) is newer than ours "
                f"({generation}); our acknowledgements were merged"
            )
        log.debug("ledger.flushed", key=key, generation=generation, records=len(doc.ledger), dropped=dropped)
        return doc
