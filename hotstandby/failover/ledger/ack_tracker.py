"""What a consumer handed out, what it may hand out, and what became acknowledged — for any
messaging system.

Records are read from *slots* (a physical topic and partition on the current cluster: ``orders``
or its remote copy ``kafka-b.orders``; a Pulsar partition) at *positions* (a Kafka offset, an
index the Pulsar adapter gives each message it receives). Acknowledgements are kept per
*ledger key* — the logical topic and the partition the record's identity names — so that a
record and its copies, on any slot of any cluster, share one ledger entry.

A record is handed out unless its identity is in the ledger or is *in flight*: handed out and
not yet acknowledged, which catches a copy or re-sent twin arriving from another slot while
the application still works on the first. Acknowledging works through a slot's positions
(Kafka's commit: everything before an offset) or one position (Pulsar's individual ack);
:meth:`collect` then moves the identities into the ledgers and says which ledgers changed, for
the caller to store.

A slot read again from an earlier position (Kafka: the partition was revoked and assigned
again, and reading restarts at the committed offset) keeps what it handed out before *set
aside*: a later acknowledgement through the slot's positions still covers those records, as
a Kafka commit of a later offset covers every earlier record of its partition. Records
before a position acknowledged through are covered already and not handed out again.

Positions are the one record of where a consumer is: per slot, the position after the records
*marked processed* (not acknowledged yet: Kafka's stored offsets, which a commit without
arguments acknowledges), after those *acknowledged through* (committed), and the last one
handed out.
"""

from __future__ import annotations

from collections import deque

from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.delivered import Delivered, Handover, holds
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.left_behind import LeftBehind

__all__ = ["AckTracker", "LedgerKey", "Slot"]

Slot = tuple[str, int]  # (physical topic, partition) records are read from
LedgerKey = tuple[str, int]  # (logical topic, partition named by the identity)


class AckTracker:
    """Per consumer: the ledgers it filters by and the records it has handed out."""

    def __init__(self) -> None:
        self.ledgers: dict[LedgerKey, PartitionLedger] = {}
        self._slots: dict[Slot, Delivered] = {}
        self._in_flight: dict[str, set[RecordId]] = {}  # per logical topic
        self._through: dict[Slot, int] = {}  # acknowledged up to (excluded)
        self._processed: dict[Slot, int] = {}  # marked processed up to (excluded)
        # Per slot, the timestamp of the last record of the acknowledged prefix.
        self.last_acked_ts: dict[Slot, int] = {}
        # Per slot, the origin of the newest copy in the acknowledged prefix (see offer); only
        # while no record of the slot was given back.
        self.last_acked_origin: dict[Slot, object] = {}
        self.filtered = 0
        # What was handed out on the previous cluster and never acknowledged (see reset).
        self._left = LeftBehind()
        # Per slot, what it handed out before it was read again from an earlier position.
        self._aside: dict[Slot, list[Delivered]] = {}
        # Per logical partition on the current cluster, the slots that hand it out.
        self._handovers: dict[LedgerKey, Handover] = {}

    # -- receiving ------------------------------------------------------------------------

    def offer(
        self, logical: str, slot: Slot, position: int, rid: RecordId | None, timestamp_ms: int, origin: object = None
    ) -> bool:
        """A record was received; True when it is to be handed out (it is then in flight).
        ``origin`` (optional, opaque) says where a replicated copy came from; once the copy and
        every record before it in the slot are acknowledged, it is :attr:`last_acked_origin`."""
        delivered = self._slots.get(slot)
        if delivered is None:
            delivered = self._new_delivered(logical, slot)
        elif delivered.entries and delivered.entries[-1][0] >= position:
            delivered = self._set_aside(slot)  # read again from an earlier position
        if origin is not None and not delivered.given_back:
            delivered.origins[position] = origin
        if position < self._through.get(slot, -1):
            # Acknowledged through already (a commit of a later record of the slot covers it).
            self.filtered += 1
            delivered.entries.append((position, None, timestamp_ms))
            return False
        if rid is not None:
            flying = self._flying(logical)
            ledger = self.ledgers.get((logical, rid.partition))
            if (ledger is not None and ledger.has(rid)) or rid in flying:
                self.filtered += 1
                delivered.entries.append((position, None, timestamp_ms))
                return False
            flying.add(rid)
        delivered.entries.append((position, rid, timestamp_ms))
        delivered.handed = position
        if delivered.handover.last is not delivered:
            delivered.took_over(position)
        return True

    def _new_delivered(self, logical: str, slot: Slot) -> Delivered:
        """The record list of a slot read for the first time since the last reset."""
        handover = self._handovers.get((logical, slot[1]))
        if handover is None:
            handover = self._handovers[(logical, slot[1])] = Handover()
        delivered = self._slots[slot] = handover.members[slot] = Delivered(logical, handover)
        return delivered

    def _set_aside(self, slot: Slot) -> Delivered:
        """Keep what ``slot`` handed out so far aside (positions start over); its new record list."""
        old = self._slots[slot]
        if old.entries:
            self._aside.setdefault(slot, []).append(old)
        new = self._slots[slot] = old.handover.members[slot] = Delivered(old.logical, old.handover)
        new.handed = old.handed
        return new

    def _flying(self, logical: str) -> set[RecordId]:
        """The records of ``logical`` in flight."""
        found = self._in_flight.get(logical)
        if found is None:
            found = self._in_flight[logical] = set()
        return found

    def merge(self, key: LedgerKey, ledger: PartitionLedger) -> None:
        """Acknowledgements stored elsewhere (another member, an earlier run) join the filter."""
        self.ledger(key).merge(ledger)

    def ledger(self, key: LedgerKey) -> PartitionLedger:
        found = self.ledgers.get(key)
        if found is None:
            found = self.ledgers[key] = PartitionLedger()
        return found

    def handed_out(self, slot: Slot, position: int, rid: RecordId | None, timestamp_ms: int) -> bool:
        """Whether this record (same position, identity and timestamp) was handed out here and is
        not collected yet. A message the application got from a cluster the consumer has left
        is not: the same slot name and position name another record here."""
        delivered = self._slots.get(slot)
        return any(holds(d, position, rid, timestamp_ms) for d in (delivered, *self._aside.get(slot, ())))

    def covered_before(self, slot: Slot, position: int) -> dict[Slot, int]:
        """What a commit of the record at ``position`` of ``slot`` covers in the other slots of
        its logical partition (a topic and its remote copies): per slot, the position after its
        last record handed out before that one, where that is past what it acknowledged. The
        application sees one partition; a commit of a record covers what it handed out before."""
        delivered = self._slots.get(slot)
        if delivered is None or not delivered.after:
            return {}
        through = self._through
        return {
            other: handed + 1
            for other, handed in delivered.handed_before(position).items()
            if through.get(other, -1) < handed + 1
        }

    def release(self, slot: Slot, position: int) -> None:
        """The record at ``position`` was handed out and will not be acknowledged there (a
        negative acknowledgement, a redelivery): no longer in flight, so it is handed out
        again when it comes again."""
        delivered = self._slots.get(slot)
        if delivered is None:
            return
        entry = delivered.entry_at(position)
        if entry is not None:
            rid = entry[1]
            if rid is not None:
                self._flying(delivered.logical).discard(rid)
            delivered.released.add(position)
            delivered.given_back = True
            delivered.origins.clear()
            self.last_acked_origin.pop(slot, None)

    def read_at(self, slot: Slot, position: int) -> bool:
        """Whether ``slot`` delivered (handed out or filtered) a record at ``position`` that is
        not collected yet."""
        delivered = self._slots.get(slot)
        if delivered is None:
            return False
        return delivered.entry_at(position) is not None

    def rewind(self, slot: Slot, position: int) -> None:
        """Reading ``slot`` goes back to ``position`` (a Kafka seek): the records handed out
        from there on and not acknowledged are given back — no longer in flight, so they are
        handed out again when read again — and nothing from there on counts as processed."""
        for delivered in (self._slots.get(slot), *self._aside.get(slot, ())):
            if delivered is None:
                continue
            in_flight = self._flying(delivered.logical)
            for at, rid, _ in delivered.entries:
                if at >= position:
                    if rid is not None:
                        in_flight.discard(rid)
                    delivered.released.add(at)
                    delivered.given_back = True
            if delivered.given_back:
                delivered.origins.clear()
                self.last_acked_origin.pop(slot, None)
        if self._processed.get(slot, 0) > position:
            self._processed[slot] = position

    # -- acknowledging --------------------------------------------------------------------

    def acknowledge_through(self, slot: Slot, next_position: int) -> None:
        """Every record of ``slot`` before ``next_position`` is processed (a Kafka commit)."""
        if self._through.get(slot, -1) < next_position:
            self._through[slot] = next_position

    def mark_processed(self, slot: Slot, next_position: int) -> None:
        """Every record of ``slot`` before ``next_position`` is processed, not yet acknowledged
        (Kafka: the offset stored, for the next commit)."""
        if self._processed.get(slot, 0) < next_position:
            self._processed[slot] = next_position

    def mark_filtered_processed(self, slot: Slot, position: int) -> None:
        """The record at ``position`` was filtered: processed as it is, but marking it covers the
        records handed out before it — so only once those are marked processed too."""
        done = self._processed.get(slot, 0)
        delivered = self._slots.get(slot)
        if done > (delivered.handed if delivered is not None else -1) and done <= position:
            self._processed[slot] = position + 1

    def processed_positions(self) -> dict[Slot, int]:
        """Per slot, the position after the records marked processed."""
        return dict(self._processed)

    def acknowledged_positions(self) -> dict[Slot, int]:
        """Per slot, the position after the records acknowledged through (since the last reset)."""
        return dict(self._through)

    def acknowledge_processed(self) -> None:
        """Acknowledge every record marked processed."""
        for slot, next_position in self._processed.items():
            self.acknowledge_through(slot, next_position)

    def acknowledge(self, slot: Slot, position: int) -> None:
        """The record at ``position`` of ``slot`` is processed (a Pulsar individual ack)."""
        delivered = self._slots.get(slot)
        if delivered is not None:
            delivered.acked.add(position)

    def collect(self, now_ms: int) -> set[LedgerKey]:
        """Move the identities of acknowledged records into the ledgers; the ledgers changed."""
        touched: set[LedgerKey] = set()
        if self._aside:
            touched |= self._collect_aside(now_ms)
        # Sequences processed, per (logical topic, partition, session): added to the ledgers
        # together, a run of consecutive ones as one range (one per record costs more than
        # the rest of collecting it).
        processed: dict[tuple[str, int, bytes], list[int]] = {}
        partition, session, sequences = -1, b"", []
        for slot, delivered in self._slots.items():
            through = self._through.get(slot, -1)
            acked, released = delivered.acked, delivered.released
            if not delivered.entries or (delivered.entries[0][0] >= through and not acked and not released):
                continue
            logical = delivered.logical
            in_flight = self._flying(logical)
            kept: deque[tuple[int, RecordId | None, int]] | None = deque() if acked or released else None
            newest_ts = None
            newest_origin = None
            origins = delivered.origins
            gap = False  # the timestamp only follows the acknowledged prefix: a seek to it skips nothing
            while delivered.entries:
                position, rid, ts = delivered.entries[0]
                if position in released:
                    delivered.entries.popleft()  # given back: not processed, nothing to record
                    released.discard(position)
                    gap = True
                    continue
                if position >= through and position not in acked:
                    if kept is None:
                        break
                    kept.append(delivered.entries.popleft())  # out of order: still handed out
                    gap = True
                    continue
                delivered.entries.popleft()
                acked.discard(position)
                if origins:
                    origin = origins.pop(position, None)
                    if origin is not None and not gap:
                        newest_origin = origin
                if not gap:
                    newest_ts = ts
                if rid is not None:
                    in_flight.discard(rid)
                    if rid.partition != partition or rid.session != session:
                        partition, session = rid.partition, rid.session
                        sequences = processed.setdefault((logical, partition, session), [])
                    sequences.append(rid.sequence)
            if kept is not None:
                delivered.entries = kept
                acked.clear()  # positions acknowledged but never handed out here: nothing to do
            if newest_ts is not None:
                self.last_acked_ts[slot] = newest_ts
            if newest_origin is not None and not delivered.given_back:
                self.last_acked_origin[slot] = newest_origin
            partition = -1  # the next slot may be another logical topic
        for (logical, partition, session), sequences in processed.items():
            key = (logical, partition)
            self.ledger(key).ack_sequences(session, sequences, now_ms)
            touched.add(key)
        return touched

    def _collect_aside(self, now_ms: int) -> set[LedgerKey]:
        """Records set aside before a position acknowledged through join the ledgers by identity."""
        touched: set[LedgerKey] = set()
        for slot, olds in list(self._aside.items()):
            through = self._through.get(slot, -1)
            for old in olds:
                in_flight = self._flying(old.logical)
                while old.entries and old.entries[0][0] < through:
                    _, rid, _ = old.entries.popleft()
                    if rid is not None:
                        in_flight.discard(rid)
                        key = self.acknowledge_identity(old.logical, rid, now_ms)
                        if key is not None:
                            touched.add(key)
            kept = [old for old in olds if old.entries]
            if kept:
                self._aside[slot] = kept
            else:
                del self._aside[slot]
        return touched

    # -- bookkeeping ----------------------------------------------------------------------

    def settled_through(self, slot: Slot, position: int) -> bool:
        """Whether every record ``slot`` delivered up to ``position`` is settled: acknowledged
        and collected, or filtered — and none was given back (it would come again later)."""
        delivered = self._slots.get(slot)
        if delivered is None or delivered.given_back:
            return False
        return not delivered.entries or delivered.entries[0][0] > position

    def outstanding(self, slot: Slot) -> int:
        """Records of ``slot`` handed out or filtered and not yet collected."""
        delivered = self._slots.get(slot)
        return len(delivered.entries) if delivered else 0

    def next_positions(self) -> dict[Slot, int]:
        """Per slot, the position after the last record received (what a commit of all covers)."""
        return {slot: d.entries[-1][0] + 1 for slot, d in self._slots.items() if d.entries}

    def forget(self, slots: set[Slot]) -> None:
        """The slots were taken away (a rebalance): what was handed out there and not
        acknowledged may be handed out again — by whoever reads it next. It stays aside: a
        later acknowledgement through a slot's positions covers it (a Kafka commit after the
        rebalance of a record handed out before it). What was marked processed there is
        dropped: the next reader marks its own."""
        for slot in slots:
            self._processed.pop(slot, None)
            if slot not in self._slots:
                continue
            delivered = self._set_aside(slot)
            delivered.handed = -1
            in_flight = self._flying(delivered.logical)
            for old in self._aside.get(slot, ()):
                for _, rid, _ in old.entries:
                    if rid is not None:
                        in_flight.discard(rid)

    def acknowledge_left_behind(
        self, slot: Slot, position: int, rid: RecordId | None, timestamp_ms: int, now_ms: int
    ) -> set[LedgerKey] | None:
        """A record handed out before the last :meth:`reset` (on a cluster the consumer has left)
        was processed after it: that record and what a Kafka commit of it covers (see
        :meth:`.LeftBehind.take`) join the ledgers, by identity. Returns the ledgers changed,
        or None when the record is not one left behind."""
        taken = self._left.take(slot, position, rid, timestamp_ms)
        if taken is None:
            return None
        keys = {self.acknowledge_identity(logical, left_rid, now_ms) for logical, left_rid in taken}
        return {key for key in keys if key is not None}

    def acknowledge_identity(self, logical: str, rid: RecordId, now_ms: int) -> LedgerKey | None:
        """The record ``rid`` of ``logical`` is processed, wherever it was read; the ledger
        changed, or None when it held the record already."""
        key = (logical, rid.partition)
        ledger = self.ledger(key)
        if ledger.has(rid):
            return None
        ledger.ack(rid, now_ms)
        return key

    def reset(self) -> None:
        """A switch: nothing handed out on the old cluster is pending any more (its
        acknowledgements were collected and stored first). Ledgers stay; what was handed out
        and not acknowledged is kept aside until the next reset, for late acknowledgements."""
        self._left.keep(self._slots, self._aside)
        self._aside.clear()
        self._handovers.clear()
        self._slots.clear()
        self._in_flight.clear()
        self._through.clear()
        self._processed.clear()
        self.last_acked_ts.clear()
        self.last_acked_origin.clear()
