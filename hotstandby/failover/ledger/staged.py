"""Acknowledgements staged by a batch's tasks, merged into the ledger when the batch commits.

A batch engine (Spark) reads a batch in tasks that may run more than once, and only later
learns that the batch counts. Each task stages what it emitted under the batch's name and its
own part number, ``<ns>/staged/<group>/<batch>/<topic>/<partition>/<part>``; a retry of the
task writes the same value. Committing the batch merges every staged part into the group's
ledgers (:class:`~hotstandby.failover.ledger.store.LedgerStore`) and then deletes the parts,
so a commit cut short is simply done again; a batch that never commits adds nothing. The
owner claims each ledger once (a newer generation fences a previous owner, e.g. a driver that
was replaced).

A staged part also keeps what a later switch starts from (:class:`SwitchHints`): per physical
topic-partition, the timestamp of the last record it emitted (the timestamp-seek fallback), and
per topic and cluster a copy came from, the newest replicated copy it emitted with its source
position there (Pulsar: the new cluster is read from that position). It may keep the order the
task emitted its records in (:class:`~hotstandby.failover.ledger.emission_order.EmissionOrder`),
so that a run of the task over another cluster emits them in that order again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.doc_parsing import load_object
from hotstandby.configcenter.versioned import delete_keys, put_value, read_prefix, read_versioned
from hotstandby.errors import FencedError, ValidationError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.emission_order import EmissionOrder
from hotstandby.failover.ledger.ledger import MAX_LEDGER_BYTES, PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.logs import get_logger

__all__ = ["Copies", "CopyMark", "StagedAcks", "StagedPart", "SwitchHints", "copy_from", "merge_copies", "read_on"]

log = get_logger("hotstandby.ledger")

_VERSION = 1


@dataclass(frozen=True)
class CopyMark:
    """A replicated copy emitted: where its original is stored on the cluster it came from
    (``ledger:entry`` on Pulsar) and its identity."""

    ledger: int
    entry: int
    identity: RecordId

    def text(self) -> str:
        return f"{self.ledger}:{self.entry}:{self.identity.encode().hex()}"

    @classmethod
    def parse(cls, text: str) -> CopyMark:
        ledger, entry, identity = text.split(":")
        return cls(int(ledger), int(entry), RecordId.decode(bytes.fromhex(identity)))


#: physical topic -> cluster the copies came from (:func:`read_on` when not known) -> the newest copy
Copies = dict[str, dict[str, CopyMark]]


def read_on(cluster: str) -> str:
    """The key of copies whose origin their message does not name (Apache Pulsar's), by the
    cluster they were read on: on a route of two clusters they came from the other one. Marks
    read on different clusters name different clusters' ledgers and are never compared."""
    return f"@{cluster}"


def copy_from(target: str, copies: Mapping[str, CopyMark], clusters: Sequence[str]) -> CopyMark | None:
    """The newest copy read whose original is on ``target`` (its origin named, or read on the
    route's other cluster when the route has two), or None."""
    others = [c for c in clusters if c != target]
    return copies.get(target) or (copies.get(read_on(others[0])) if len(others) == 1 else None)


def merge_copies(into: Copies, more: Copies) -> None:
    """Add ``more`` to ``into``, keeping the newest copy per topic and origin."""
    for topic, origins in more.items():
        kept = into.setdefault(topic, {})
        for origin, mark in origins.items():
            if origin not in kept or (mark.ledger, mark.entry) > (kept[origin].ledger, kept[origin].entry):
                kept[origin] = mark


@dataclass
class SwitchHints:
    """What committed batches emitted that tells a later switch where to start."""

    #: physical topic -> partition -> timestamp (ms) of the last record emitted
    timestamps: dict[str, dict[int, int]] = field(default_factory=dict)
    copies: Copies = field(default_factory=dict)

    def merge(self, other: SwitchHints) -> None:
        for topic, stamps in other.timestamps.items():
            into = self.timestamps.setdefault(topic, {})
            for p, ts in stamps.items():
                into[p] = max(ts, into.get(p, ts))
        merge_copies(self.copies, other.copies)

    def copy(self) -> SwitchHints:
        out = SwitchHints()
        out.merge(self)
        return out


@dataclass
class StagedPart:
    """What one task emitted of one logical partition."""

    topic: str
    partition: int
    ledger: PartitionLedger = field(default_factory=PartitionLedger)
    #: physical topic -> partition -> timestamp (ms) of the last record emitted
    timestamps: dict[str, dict[int, int]] = field(default_factory=dict)
    copies: Copies = field(default_factory=dict)
    order: EmissionOrder | None = None  # how the task emitted them, when kept

    @classmethod
    def of(
        cls,
        topic: str,
        partition: int,
        ids: Iterable[RecordId],
        *,
        timestamps: dict[str, dict[int, int]] | None = None,
        copies: Copies | None = None,
        order: EmissionOrder | None = None,
        now_ms: int | None = None,
    ) -> StagedPart:
        """The part for the records ``ids`` (acknowledged at ``now_ms``, default: now)."""
        kept = order if order is not None and order.kept else None
        part = cls(topic, partition, timestamps=timestamps or {}, copies=copies or {}, order=kept)
        by_session: dict[bytes, list[int]] = {}
        for rid in ids:
            by_session.setdefault(rid.session, []).append(rid.sequence)
        when = int(time.time() * 1000) if now_ms is None else now_ms
        for session, sequences in by_session.items():
            part.ledger.ack_sequences(session, sequences, when)
        return part

    def to_json(self) -> str:
        doc: dict[str, object] = {
            "v": _VERSION,
            "sessions": self.ledger.sessions_json(),
            "timestamps": {t: {str(p): ts for p, ts in sorted(v.items())} for t, v in sorted(self.timestamps.items())},
        }
        if self.copies:
            doc["copies"] = {t: {o: m.text() for o, m in sorted(v.items())} for t, v in sorted(self.copies.items())}
        if self.order is not None:
            doc["order"] = self.order.to_json()
        return json.dumps(doc, separators=(",", ":"))

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
        marks = doc.get("copies", {})
        if not isinstance(marks, dict) or not all(isinstance(v, dict) for v in marks.values()):
            raise ValidationError(what, "'copies' must map topics to cluster -> ledger:entry:identity")
        try:
            copies = {str(t): {str(o): CopyMark.parse(m) for o, m in v.items()} for t, v in marks.items()}
        except (AttributeError, TypeError, ValueError):
            raise ValidationError(what, "'copies' must hold ledger:entry:identity") from None
        sessions = PartitionLedger.from_sessions_json(doc.get("sessions", {}), what)
        order = EmissionOrder.from_json(doc["order"], what) if "order" in doc else None
        return cls(topic, partition, sessions, timestamps, copies, order)


def _hints(parts: list[tuple[str, StagedPart | None]]) -> SwitchHints:
    hints = SwitchHints()
    for _, part in parts:
        if part is not None:
            hints.merge(SwitchHints(part.timestamps, part.copies))
    return hints


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

    def part(self, batch: str, topic: str, partition: int, part: int) -> StagedPart | None:
        """What task ``part`` of ``batch`` staged for ``topic[partition]``; None if nothing."""
        key = self._center.keys.staged_part(self.group, batch, topic, partition, part)
        found = read_versioned(self._center, key)
        return None if found.value is None else StagedPart.from_json(topic, partition, found.value, key)

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

    def commit(self, batch: str) -> SwitchHints:
        """Merge what ``batch`` staged into the ledgers, then forget it (unreadable parts too:
        they were logged). Returns what the batch's parts tell a later switch."""
        parts = self.staged(batch)
        merged: dict[tuple[str, int], PartitionLedger] = {}
        for _, part in parts:
            if part is not None:
                merged.setdefault((part.topic, part.partition), PartitionLedger()).merge(part.ledger)
        hints = _hints(parts)
        for (topic, partition), ledger in sorted(merged.items()):
            self._save(topic, partition, ledger)
        delete_keys(self._center, [key for key, _ in parts])
        if parts:
            log.debug("ledger.batch_committed", group=self.group, batch=batch, parts=len(parts))
        return hints

    def peek(self, batch: str) -> SwitchHints:
        """What the parts ``batch`` staged so far tell a later switch, the batch not yet
        committed (its ranges are fixed: a replay reads the same records)."""
        return _hints(self.staged(batch))

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
