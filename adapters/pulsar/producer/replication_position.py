"""How far geo-replication copied a topic from the cluster a producer leaves to the one it moves to.

A copy carries its source position (``__MSG_PROP_REPL_SOURCE_POSITION`` = ``"ledger:entry"``
on the source cluster). Replication copies a topic partition in order, so the newest copy from
the source on the target proves every source entry before its own copied, and its own when
the copy is not part of a batch (geo-replication copies an entry whole; a batch's later
messages may still be on their way where a replicator copies message by message). Apache
Pulsar writes that position in the copied entry's metadata,
which pulsar-client shows only on a message that was not batched; a batched copy is known by
its identity instead: a message of the producer's own that the source acknowledged at
``ledger:entry`` and that it sent nowhere else (``ours``) can only be on the target as a copy;
it also proves copied every message of the producer's that the source acknowledged before it
(acknowledgement times by the producer's own clock: no skew margin). That newest copy is
looked for at the end of the target's partition:
its last message (a reader from the latest message, inclusive), then further back in its last
ledger (up to :data:`_TAIL_MESSAGES` messages), within a time budget; a partition where none is
found proves nothing (its window records are all re-sent). Nothing is written on the target:
readers only. pulsar-lite serves no reader from the latest message inclusive, so on the lite
reference cluster nothing is proven copied and a switch re-sends the whole window.

Positions are :class:`~hotstandby.failover.outbox.ReplicatedTo` with the offset
``ledger << 40 | entry`` (:func:`offset_of`, the order of entries within a topic partition) and
the copy's publish time, which :func:`~hotstandby.failover.outbox.replicated` compares with a
record's acknowledgement: a source that came back empty since cannot have a position counted.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping

import pulsar

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM, identity_in
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.outbox import ReplicatedTo, Stored
from hotstandby.logs import get_logger

__all__ = ["Ours", "copied_through", "offset_of", "own_copies"]

#: Where the source acknowledged a message of the producer's own that it sent to the source
#: only (None: not such a message).
Ours = Callable[[RecordId], "Stored | None"]

log = get_logger("hotstandby.pulsar.producer")

_ENTRY_BITS = 40
_TAIL_MESSAGES = 2_000  # read back from the end at most, per partition
_BACK_ENTRIES = (0, 16, 256)  # how far back in the last ledger to start reading, in turn
_READ_WAIT_MS = 500  # for each message of the tail (it is there: read from storage)


def offset_of(ledger: int, entry: int) -> int:
    """A position in a topic partition as one comparable number (ledgers ascend, then entries)."""
    return ledger << _ENTRY_BITS | entry


def copied_through(
    client: pulsar.Client,
    topic: str,
    partitions: Iterable[str],
    source: str,
    *,
    only_other: bool,
    budget_s: float,
    ours: Ours | None = None,
) -> dict[tuple[str, int], ReplicatedTo]:
    """For each of ``topic``'s ``partitions`` (their topic names, as pulsar-client lists them),
    by ``(topic, partition number)``, what the target (``client``'s cluster) proves copied from
    ``source``; partitions without a proof are left out. ``only_other``: the
    route has two clusters, so a copy that does not name its source (Apache Pulsar's do not)
    comes from ``source``. ``ours``: the producer's own messages that prove a batched copy (see
    the module doc). Returns after ``budget_s`` at most with what was found by then:
    pulsar-client's calls wait up to the client's operation timeout, so they run on a thread
    of their own, which ends at its next step once the budget is spent."""
    deadline = time.monotonic() + budget_s
    found: dict[tuple[str, int], ReplicatedTo] = {}
    lock = threading.Lock()

    def look() -> None:
        for name in partitions:
            if time.monotonic() >= deadline:
                log.info("producer.replication_position_budget_spent", topic=topic, budget_s=budget_s)
                return
            try:
                position = _newest_copy(client, name, source, only_other, deadline, ours)
            except pulsar.PulsarException as exc:
                log.info("producer.replication_position_unread", topic=name, error=str(exc))
                continue
            if position is not None:
                with lock:
                    found[(topic, _number(name))] = position

    worker = threading.Thread(target=look, daemon=True, name="hotstandby-replication-position")
    worker.start()
    worker.join(budget_s)
    with lock:
        return dict(found)


def own_copies(session: bytes, window: Callable[[], Mapping[tuple[int, int], Stored]]) -> Ours:
    """:data:`Ours` for the producer of ``session``: ``window()`` gives, by (partition,
    sequence), where the source acknowledged its messages sent there only. Asked once, on the
    first of the producer's messages found on the target (a switch's read, not per message)."""
    index: Mapping[tuple[int, int], Stored] | None = None

    def lookup(rid: RecordId) -> Stored | None:
        nonlocal index
        if rid.session != session:
            return None
        if index is None:
            index = window()
        return index.get((rid.partition, rid.sequence))

    return lookup


def _number(name: str) -> int:
    """A partition topic's number (0: a topic without partitions)."""
    _, _, number = name.rpartition("-partition-")
    return int(number) if number.isdigit() else 0


def _copy_position(msg: pulsar.Message, source: str, only_other: bool, ours: Ours | None) -> ReplicatedTo | None:
    """The source entries ``msg`` proves copied, if it is a copy from ``source``."""
    properties = msg.properties()
    raw = properties.get(REPL_SOURCE_POSITION)
    if ours is not None and HEADER in properties:
        rid = identity_in(properties, msg)
        stored = None if rid is None else ours(rid)
        if stored is not None:
            # Our messages the source acknowledged before this one are before it there, so
            # copied: no clock skew to allow for, unlike with a copy's publish time.
            return ReplicatedTo(stored.offset - _part_of_entry(msg), int(msg.publish_timestamp()),
                                own_acked_ms=stored.acked_ms)  # fmt: skip
    if raw is None:
        return None
    origin = properties.get(REPLICATED_FROM)
    if origin != source and not (origin is None and only_other):
        return None
    try:
        ledger, entry = (int(part) for part in raw.split(":"))
    except ValueError:
        return None
    return ReplicatedTo(offset_of(ledger, entry) - _part_of_entry(msg), int(msg.publish_timestamp()))


def _part_of_entry(msg: pulsar.Message) -> int:
    """1 when ``msg`` is one message of a batch entry (the entry's later messages may not be
    copied yet: only the entries before count), 0 when it is the whole entry."""
    return 1 if msg.message_id().batch_index() >= 0 else 0


def _newest_copy(
    client: pulsar.Client, name: str, source: str, only_other: bool, deadline: float, ours: Ours | None
) -> ReplicatedTo | None:
    if client.get_topic_partitions(name) != [name]:
        # pulsar-lite takes a partition's topic for a partitioned topic: a reader of it would
        # read several topics, whose "more available?" can abort the process in pulsar-client
        # (std::future_error: Promise already satisfied). Nothing is proven there.
        return None
    last = _last_message(client, name, deadline)
    if last is None:
        return None
    end = last.message_id()
    ledger, entry = end.ledger_id(), end.entry_id()
    for back in _BACK_ENTRIES:
        first = max(entry - back, 0)
        if first > 0:  # from the entry before, exclusive: the whole of entry ``first`` is read
            start, inclusive = pulsar.MessageId(-1, ledger, first - 1, -1), False
        else:
            start, inclusive = pulsar.MessageId(-1, ledger, 0, -1), True
        messages = _read_from(client, name, start, inclusive=inclusive, limit=_TAIL_MESSAGES, deadline=deadline,
                              end=(ledger, entry, end.batch_index()))  # fmt: skip
        for msg in reversed(messages):
            position = _copy_position(msg, source, only_other, ours)
            if position is not None:
                return position
        if first == 0:
            break  # the ledger's start: an earlier ledger is not looked at
    return None


def _last_message(client: pulsar.Client, name: str, deadline: float) -> pulsar.Message | None:
    """The partition's last message: a reader from the latest message, inclusive, which
    pulsar-client positions there when asked whether a message is available (pulsar-lite
    serves no such reader, nor a last message id of an empty topic: None)."""
    reader = client.create_reader(name, pulsar.MessageId.latest, start_message_id_inclusive=True)
    try:
        if not reader.has_message_available():
            return None
        wait = min(_READ_WAIT_MS, int((deadline - time.monotonic()) * 1000))
        return reader.read_next(wait) if wait > 0 else None
    except pulsar.PulsarException:  # a timeout, or pulsar-lite's UnknownError
        return None
    finally:
        with contextlib.suppress(pulsar.PulsarException):
            reader.close()


def _read_from(
    client: pulsar.Client,
    name: str,
    start: pulsar.MessageId,
    *,
    inclusive: bool,
    limit: int,
    deadline: float,
    end: tuple[int, int, int] | None = None,
) -> list[pulsar.Message]:
    """Messages of ``name`` from ``start``: at most ``limit``, up to the message ``end`` (ledger,
    entry, batch index), each waited for :data:`_READ_WAIT_MS` at most."""
    reader = client.create_reader(name, start, start_message_id_inclusive=inclusive)
    out: list[pulsar.Message] = []
    try:
        while len(out) < limit:
            wait = min(_READ_WAIT_MS, int((deadline - time.monotonic()) * 1000))
            if wait <= 0:
                break
            try:
                msg = reader.read_next(wait)
            except pulsar.Timeout:
                break
            mid = msg.message_id()
            at = (mid.ledger_id(), mid.entry_id(), mid.batch_index())
            if end is not None and at[:2] > end[:2]:
                break
            out.append(msg)
            if at == end:
                break
    finally:
        with contextlib.suppress(pulsar.PulsarException):
            reader.close()
    return out
