"""The ack ledger: which records a consumer group acknowledged, by identity, not offset.

One :class:`PartitionLedger` per (group, logical topic, partition) maps each producer session
to the :class:`RangeSet` of its acknowledged sequences — the cluster-neutral form of Pulsar's
"individually deleted messages", usable on any cluster. In-order processing keeps one range
per session; out-of-order acknowledgements add a few.

Sessions whose last acknowledgement is older than a maximum age are dropped (:meth:`gc`): their
producers are long gone and their records long consumed everywhere.

JSON form (what etcd holds; the ranges are the compact :class:`RangeSet` bytes, base64)::

    {"v": 1, "generation": 7, "owner": "consumer-1", "updated_at_ms": 1795318721277,
     "sessions": {"<session hex>": {"last_ack_ms": 1795318721000, "acked": "<base64>"}}}
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from hotstandby.configcenter.doc_parsing import load_object, read_int, read_text
from hotstandby.errors import ValidationError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.rangeset import RangeSet

__all__ = ["MAX_LEDGER_BYTES", "LedgerDocument", "PartitionLedger"]

_VERSION = 1
#: etcd refuses requests over 1.5 MiB by default; a stored ledger is always smaller.
MAX_LEDGER_BYTES = 2 * 1024 * 1024


@dataclass
class _Session:
    acked: RangeSet = field(default_factory=RangeSet)
    last_ack_ms: int = 0


class PartitionLedger:
    """Acknowledged sequences of one (group, topic, partition), by producer session."""

    __slots__ = ("_sessions",)
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self) -> None:
        self._sessions: dict[bytes, _Session] = {}

    def ack(self, rid: RecordId, now_ms: int) -> None:
        self._acked_at(rid.session, now_ms).add(rid.sequence)

    def _acked_at(self, session: bytes, now_ms: int) -> RangeSet:
        """``session``'s acknowledged sequences, acknowledged again at ``now_ms``."""
        entry = self._sessions.get(session)
        if entry is None:
            entry = self._sessions[session] = _Session()
        if now_ms > entry.last_ack_ms:
            entry.last_ack_ms = now_ms
        return entry.acked

    def ack_sequences(self, session: bytes, sequences: list[int], now_ms: int) -> None:
        """:meth:`ack` for many records of one session (``sequences`` is sorted in place)."""
        if not sequences:
            return
        acked = self._acked_at(session, now_ms)
        sequences.sort()
        start = end = sequences[0]
        for seq in sequences:
            if seq > end:  # a gap: the run so far is one range
                acked.add_range(start, end)
                start = seq
            end = seq + 1
        acked.add_range(start, end)

    def has(self, rid: RecordId) -> bool:
        """Whether ``rid`` is acknowledged (``in`` without the type check, for per-record paths)."""
        entry = self._sessions.get(rid.session)
        return entry is not None and rid.sequence in entry.acked

    def __contains__(self, rid: object) -> bool:
        if not isinstance(rid, RecordId):
            return False
        entry = self._sessions.get(rid.session)
        return entry is not None and rid.sequence in entry.acked

    def __len__(self) -> int:
        """Acknowledged records held."""
        return sum(len(e.acked) for e in self._sessions.values())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionLedger) and {
            k: (v.acked, v.last_ack_ms) for k, v in self._sessions.items()
        } == {k: (v.acked, v.last_ack_ms) for k, v in other._sessions.items()}

    @property
    def sessions(self) -> list[bytes]:
        return sorted(self._sessions)

    def ranges(self, session: bytes) -> RangeSet:
        entry = self._sessions.get(session)
        return entry.acked.copy() if entry else RangeSet()

    def merge(self, other: PartitionLedger) -> None:
        """Add everything ``other`` acknowledged (acknowledgements only ever grow)."""
        for session, theirs in other._sessions.items():
            mine = self._sessions.get(session)
            if mine is None:
                self._sessions[session] = _Session(theirs.acked.copy(), theirs.last_ack_ms)
            else:
                mine.acked.update(theirs.acked)
                mine.last_ack_ms = max(mine.last_ack_ms, theirs.last_ack_ms)

    def gc(self, max_age_ms: int, now_ms: int) -> list[bytes]:
        """Drop sessions whose last acknowledgement is older than ``max_age_ms``; returns them."""
        old = [s for s, e in self._sessions.items() if now_ms - e.last_ack_ms > max_age_ms]
        for session in old:
            del self._sessions[session]
        return old

    def copy(self) -> PartitionLedger:
        out = PartitionLedger()
        out.merge(self)
        return out

    # -- JSON -----------------------------------------------------------------------------

    def sessions_json(self) -> dict[str, Any]:
        return {
            s.hex(): {"last_ack_ms": e.last_ack_ms, "acked": base64.b64encode(e.acked.to_bytes()).decode()}
            for s, e in sorted(self._sessions.items())
        }

    @classmethod
    def from_sessions_json(cls, doc: Any, what: str) -> PartitionLedger:
        """The ledger from its ``sessions`` JSON; :class:`ValidationError` if malformed."""
        out = cls()
        if not isinstance(doc, dict):
            raise ValidationError(what, "'sessions' must be an object")
        for key, value in doc.items():
            try:
                if not isinstance(value, dict) or not isinstance(value.get("acked"), str):
                    raise ValidationError(what, "must be an object with 'acked' (base64) and 'last_ack_ms'")
                session = bytes.fromhex(key)
                acked = RangeSet.from_bytes(base64.b64decode(value["acked"], validate=True))
                last_ack_ms = read_int(what, value, "last_ack_ms", 0)
            except ValidationError as exc:
                raise ValidationError(what, f"session {key[:32]}: {exc.problem}") from None
            except (ValueError, binascii.Error) as exc:  # FormatError is a ValueError too
                raise ValidationError(what, f"session {key[:32]}: {exc}") from None
            out._sessions[session] = _Session(acked, last_ack_ms)
        return out


@dataclass
class LedgerDocument:
    """A ledger as stored: the ledger plus who wrote it, under which generation, when."""

    ledger: PartitionLedger
    generation: int = -1
    owner: str = ""
    updated_at_ms: int = 0

    def to_json(self) -> str:
        """The stored form: compact JSON, written out directly (a commit writes one per
        partition; every value but the owner is a number, hex or base64, nothing to escape)."""
        sessions = ",".join(
            f'"{session}":{{"last_ack_ms":{int(entry["last_ack_ms"])},"acked":"{entry["acked"]}"}}'
            for session, entry in self.ledger.sessions_json().items()
        )
        return (
            f'{{"v":{_VERSION},"generation":{int(self.generation)},"owner":{json.dumps(self.owner)},'
            f'"updated_at_ms":{int(self.updated_at_ms)},"sessions":{{{sessions}}}}}'
        )

    @classmethod
    def from_json(cls, raw: bytes | str, what: str = "ledger") -> LedgerDocument:
        """Parse a stored ledger; any malformed value raises :class:`ValidationError`."""
        doc = load_object(what, raw, max_bytes=MAX_LEDGER_BYTES)
        if doc.get("v") != _VERSION:
            raise ValidationError(what, f"not a version {_VERSION} ledger")
        return cls(
            ledger=PartitionLedger.from_sessions_json(doc.get("sessions", {}), what),
            generation=read_int(what, doc, "generation", -1),
            owner=read_text(what, doc, "owner"),
            updated_at_ms=read_int(what, doc, "updated_at_ms", 0),
        )
