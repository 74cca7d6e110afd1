"""``maxEntriesPerTrigger`` for Pulsar routes (the Pulsar Spark connector's name): a micro-batch
reads at most about that many entries in all, shared among the partitions by what each has
waiting, at least one each (Spark's Kafka source rule, :func:`~.planning.cap`).

Pulsar counts no offsets: a position is a message id, ``(ledger, entry)``. Within one ledger
entries are numbered without gaps, so what waits between two ids of the same ledger is known.
Across ledgers it is not (pulsar-client cannot list a topic's ledgers): the driver reads the
first message after the batch's start to learn where the next entries are, and a partition
whose waiting entries run into a later ledger ends its batch at most ``limit`` entries into
the ledger that message is in. If that ledger ends sooner, the batch ends with it (a task
reads up to the end id, and the next ledger's messages come after it), and the next batch
starts in the following ledger. So every batch reads at least one entry of each partition
that has some waiting, and whole entries: ends name entries, not messages in them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pulsar

from hotstandby.spark_integration.pulsar.cluster import id_key, id_text, message_id
from hotstandby.spark_integration.source.planning import Slot, cap

__all__ = ["capped_ends"]

#: The first message after a position: ``(ledger, entry)``, or None when none came in time.
FirstAfter = Callable[[str, str], "tuple[int, int] | None"]


def capped_ends(
    starts: Mapping[str, str], ends: Mapping[str, str], limit: int, first_after: FirstAfter
) -> dict[str, str]:
    """End ids of a batch from ``starts`` reading at most about ``limit`` entries in all
    (``ends``: the partitions' last ids; ``first_after(topic, id)``: see :data:`FirstAfter`)."""
    begin: dict[Slot, int] = {}
    latest: dict[Slot, int] = {}
    ledger_of: dict[str, int] = {}
    open_ended: set[str] = set()  # waiting entries run into a later ledger: their number is unknown
    out = dict(ends)
    for topic, end in ends.items():
        start = starts.get(topic, "")
        at, last = id_key(start), id_key(end)
        if not end or last <= at:
            continue
        if start and at[0] == last[0]:
            first = (at[0], at[1] + 1)
        else:
            found = first_after(topic, start)
            if found is None:  # not readable now: this partition waits for the next batch
                out[topic] = start
                continue
            first = found
        slot = (topic, 0)
        ledger_of[topic] = first[0]
        begin[slot] = first[1] - 1
        if first[0] == last[0]:
            latest[slot] = last[1]
        else:
            latest[slot] = begin[slot] + limit
            open_ended.add(topic)
    for (topic, _), position in cap(begin, latest, limit).items():
        if topic not in open_ended and position == latest[(topic, 0)]:
            continue  # everything waiting: the last id itself
        partition = message_id(ends[topic]).partition()
        out[topic] = id_text(pulsar.MessageId(partition, ledger_of[topic], position, -1))
    return out
