"""Acknowledgements staged by a batch's tasks, merged into the ledger when the batch commits.

A batch engine (Spark) reads a batch in tasks that may run more than once, and only later
learns that the batch counts. Each task stages what it emitted under the batch's name and its
own part number, ``<ns>/staged/<group>/<batch>/<topic>/<partition>/<part>``; a retry of the
task writes the same value. Committing the batch merges every staged part into the group's
ledgers (:class:`~hotstandby.failover.ledger.store.LedgerStore`) and then deletes the parts,
so a commit cut short is simply done again; a batch that never commits adds nothing. The
owner claims each ledger once (a newer generation fences a previous owner, e.g. a driver that
was replaced).

A staged part also keeps, per physical topic-partition, the timestamp of the last record it
emitted: the timestamp-seek fallback of a later switch starts from it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.doc_parsing import load_object
from hotstandby.configcenter.versioned import delete_keys, put_value, read_prefix
from hotstandby.errors import FencedError, ValidationError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ledger import MAX_LEDGER_BYTES, PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.logs import get_logger

__all__ = ["StagedAcks", "StagedPart"]

log = get_logger("hotstandby.ledger")

_VERSION = 1


@dataclass
class StagedPart:
    """What one task emitted of one logical partition."""

    topic: str
    partition: int
    ledger: PartitionLedger = field(default_factory=PartitionLedger)
    #: physical topic -> partition -> timestamp (ms) of the last record emitted
    timestamps: dict[str, dict[int, int]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        topic: str,
        partition: int,
        ids: Iterable[RecordId],
        *,
        timestamps: dict[str, dict[int, int]] | None = None,
        now_ms: int | None = None,
    ) -> StagedPart:
        """The part for the records ``ids`` (acknowledged at ``now_ms``, default: now)."""
        part = cls(topic, partition, timestamps=timestamps or {})
        by_session: dict[bytes, list[int]] = {}
        for rid in ids:
            by_session.setdefault(rid.session, []).append(rid.sequence)
        when = int(time.time() * 1000) if now_ms is None else now_ms
        for session, sequences in by_session.items():
            part.ledger.ack_sequences(session, sequences, when)
        return part

    def to_json(self) -> str:
        return json.dumps(
            {
                "v": _VERSION,
                "sessions": self.ledger.sessions_json(),
                "timestamps": {
                    t: {str(p): ts for p, ts in sorted(v.items())} for t, v in sorted(self.timestamps.items())
                },
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, topic: str, partition: int, raw: bytes, what: str) -> StagedPart:
        doc = load_object(what, raw, max_bytes=MAX_LEDGER_BYTES)
        if doc.get("v") != _VERSION:
            raise ValidationError(what, f"not a version {_VERSION} staged part")
        stamps = doc.get("timestamps", {})
        if not isinstance(stamps, dict) or not all(isinstance(v, dict) for v in stamps.values()):
            raise ValidationError(what, "'timestamps' must map topics to partition -> timestamp")
        try:
            timestamps = {str(t): {int(p): int(ts) for p, ts in v.items()} for t, v in stamps.items()}
        except (TypeError, ValueError):
            raise ValidationError(what, "'timestamps' must hold integers") from None
        return cls(topic, partition, PartitionLedger.from_sessions_json(doc.get("sessions", {}), what), timestamps)


class StagedAcks:
    """Stages and commits batches' acknowledgements for ``group`` (see the module docs)."""

    def __init__(self, center: ConfigCenter, group: str, *, store: LedgerStore | None = None, owner: str = "") -> None:
        self._center = center
        self.group = group
        self._store = store or LedgerStore(center)
        self._owner = owner
        self._generations: dict[tuple[str, int], int] = {}

    def stage(self, batch: str, part: int, staged: StagedPart) -> None:
        key = self._center.keys.staged_part(self.group, batch, staged.topic, staged.partition, part)
        put_value(self._center, key, staged.to_json().encode())

    def staged(self, batch: str) -> list[tuple[str, StagedPart | None]]:
        """``(key, part)`` for every key staged under ``batch``; an unreadable one is logged and
        has no part (its records were emitted; a later switch may read them again)."""
        prefix = self._center.keys.staged(self.group, batch)
        out: list[tuple[str, StagedPart | None]] = []
        for item in read_prefix(self._center, prefix):
            try:
                topic, partition, _ = self._center.keys.tail(item.key, prefix)
                out.append((item.key, StagedPart.from_json(topic, int(partition), item.value or b"", item.key)))
            except (ValueError, ValidationError) as exc:
                log.error("ledger.staged_rejected", key=item.key, reason=str(exc))
                out.append((item.key, None))
        return out

    def commit(self, batch: str) -> dict[str, dict[int, int]]:
        """Merge what ``batch`` staged into the ledgers, then forget it (unreadable parts too:
        they were logged). Returns the last emitted timestamps per physical topic-partition."""
        parts = self.staged(batch)
        merged: dict[tuple[str, int], PartitionLedger] = {}
        timestamps: dict[str, dict[int, int]] = {}
        for _, part in parts:
            if part is None:
                continue
            merged.setdefault((part.topic, part.partition), PartitionLedger()).merge(part.ledger)
            for topic, stamps in part.timestamps.items():
                into = timestamps.setdefault(topic, {})
                for p, ts in stamps.items():
                    into[p] = max(ts, into.get(p, ts))
        for (topic, partition), ledger in sorted(merged.items()):
            self._save(topic, partition, ledger)
        delete_keys(self._center, [key for key, _ in parts])
        if parts:
            log.debug("ledger.batch_committed", group=self.group, batch=batch, parts=len(parts))
        return timestamps

    def _save(self, topic: str, partition: int, ledger: PartitionLedger) -> None:
        generation = self._generations.get((topic, partition))
        if generation is None:
            generation = self._store.claim(self.group, topic, partition, owner=self._owner).generation
            self._generations[(topic, partition)] = generation
        try:
            self._store.save(self.group, topic, partition, ledger, generation=generation, owner=self._owner)
        except FencedError as exc:  # merged all the same; a newer owner runs the query now
            log.warning("ledger.fenced", group=self.group, topic=topic, partition=partition, error=str(exc))

    def load(self, topic: str, partition: int) -> PartitionLedger:
        """The group's stored ledger of a logical partition."""
        return self._store.load(self.group, topic, partition).ledger
