"""Following a group's stored ledgers as they change.

Every member of a group merges the ledgers the others store into its own, as they are
written: when a broker hands a partition to a new owner before the previous one stored its
last acknowledgements (a rebalance the broker completes without waiting for a member, or a
switch in which a member was slow), those acknowledgements still reach the new owner within
milliseconds, and it skips the records instead of delivering them again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from urllib.parse import unquote

from hotstandby.configcenter import ConfigCenter, Event
from hotstandby.errors import ConfigCenterError, FormatError
from hotstandby.failover.ledger.ledger import LedgerDocument, PartitionLedger
from hotstandby.logs import get_logger

__all__ = ["LedgerFollower"]

log = get_logger("hotstandby.ledger")

OnLedger = Callable[[str, int, PartitionLedger], None]


class LedgerFollower:
    """Calls ``on_ledger(topic, partition, ledger)`` for every stored ledger of ``group``:
    once for each at the start, then on every change. Reconnects after errors, ``retry_s``
    later (an in-memory store can take a much shorter pause than etcd)."""

    def __init__(
        self, center: ConfigCenter, group: str, on_ledger: OnLedger, *, name: str = "ledgers", retry_s: float = 1.0
    ) -> None:
        self._center = center
        self._prefix = center.keys.ledger(group, "", 0).rsplit("/", 2)[0] + "/"
        self._on_ledger = on_ledger
        self._retry_s = retry_s
        self._stopped = threading.Event()
        self._revision = 0
        self._thread = threading.Thread(target=self._run, name=f"hotstandby-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _apply(self, key: str, value: bytes) -> None:
        try:
            topic, partition = key[len(self._prefix) :].rsplit("/", 1)
            doc = LedgerDocument.from_json(value, key)
            self._on_ledger(unquote(topic), int(partition), doc.ledger)
        except (ValueError, FormatError) as exc:
            log.warning("ledger.unreadable", key=key, error=str(exc))

    def _run(self) -> None:
        store = self._center.store
        while not self._stopped.is_set():
            stream = None
            try:
                kvs, self._revision = store.get_prefix(self._prefix)
                for kv in kvs:
                    self._apply(kv.key, kv.value)
                stream = store.watch_prefix(self._prefix, self._revision + 1)
                while not self._stopped.is_set():
                    events: list[Event] = stream.get(timeout=0.5)
                    for event in events:
                        self._revision = event.mod_revision
                        if event.type == "put":
                            self._apply(event.key, event.value)
            except ConfigCenterError as exc:  # includes a compacted revision: read everything again
                log.warning("ledger.follow_interrupted", prefix=self._prefix, error=str(exc))
                self._stopped.wait(self._retry_s)
            finally:
                if stream is not None:
                    stream.cancel()
