"""Following a group's stored ledgers as they change.

Every member of a group merges the ledgers the others store into its own, as they are
written: when a broker hands a partition to a new owner before the previous one stored its
last acknowledgements (a rebalance the broker completes without waiting for a member, or a
switch in which a member was slow), those acknowledgements still reach the new owner within
milliseconds, and it skips the records instead of delivering them again.
"""

from __future__ import annotations

from collections.abc import Callable

from hotstandby.configcenter import ConfigCenter, Event, KeyValue
from hotstandby.configcenter.prefix_watch import PrefixWatch
from hotstandby.errors import FormatError
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger
from hotstandby.logs import get_logger

__all__ = ["LedgerFollower"]

log = get_logger("hotstandby.ledger")

OnLedger = Callable[[str, int, PartitionLedger], None]


class LedgerFollower:
    """Calls ``on_ledger(topic, partition, ledger)`` for every stored ledger of ``group``:
    once for each at the start, then on every change (the config center's
    :class:`~hotstandby.configcenter.prefix_watch.PrefixWatch`: it resumes where it was after
    etcd trouble, and reads them all again only after a compaction)."""

    def __init__(
        self, center: ConfigCenter, group: str, on_ledger: OnLedger, *, name: str = "ledgers", retry_s: float = 2.0
    ) -> None:
        self._center = center
        self._group = group
        self._prefix = center.keys.group_ledgers(group)
        self._on_ledger = on_ledger
        self._name = name
        self._retry_s = retry_s  # at most this long between attempts while the store does not answer
        self._watch: PrefixWatch | None = None

    def start(self) -> None:
        self._watch = self._center.follow_prefix(
            self._prefix, self._on_snapshot, self._on_event, name=self._name, max_backoff=self._retry_s
        )

    def close(self, timeout: float = 5.0) -> None:
        if self._watch is not None:
            self._watch.stop(timeout)

    def _on_snapshot(self, kvs: list[KeyValue], initial: bool) -> None:
        for kv in kvs:
            self._apply(kv.key, kv.value)

    def _on_event(self, event: Event) -> None:
        if event.type == "put":
            self._apply(event.key, event.value)

    def _apply(self, key: str, value: bytes) -> None:
        try:
            topic, partition = self._center.keys.ledger_of(self._group, key)
            doc = LedgerDocument.from_json(value, key)
            self._on_ledger(topic, partition, doc.ledger)
        except (ValueError, FormatError) as exc:
            log.warning("ledger.unreadable", key=key, error=str(exc))
