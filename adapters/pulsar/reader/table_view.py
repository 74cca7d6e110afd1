"""``TableView`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.TableView of the cluster
in use.

A table view holds the latest value of each key of a topic (an empty value removes the key).
Replication copies the topic under its name, so reading the new cluster's copy from its start
gives the same map: in a switch the map is built anew there (the switch waits until the topic
is read) and replaces the old one. Listeners of ``for_each_and_listen`` then hear of what the
switch changed — a key whose value differs, a new key, a key gone (with the empty value of a
removal) — and not of the rest again; afterwards of every update, as pulsar-client calls them.

The view reads the topic itself, with a pulsar-client reader (``is_read_compacted``, as
pulsar-client's view), on a thread of its own: pulsar-client 3.13's view reads a topic's
messages in nested calls, one deeper per message, and overflows an 8 MiB thread stack
(the process dies) past a few thousand of them — as when a switch reads a whole topic. A
message whose identity (``hs-id``) the map holds already is not applied again: a producer's
re-sent twin, a copy replicated late behind a newer value of its key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.adapters.pulsar.adapter import identity_of
from hotstandby.adapters.pulsar.message_ids import more_in_batch
from hotstandby.adapters.pulsar.waits import SLICE_MS
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.logs import Seldom, get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Client

__all__ = ["TableView"]

log = get_logger("hotstandby.pulsar.table_view")

Listener = Callable[[str, Any], None]
# Building a map: how long one message may take to come before the reader is replaced, and
# how many times (then the build fails).
_STALL_MS = 10_000
_STALLS = 2
_FAILED_WAIT_S = 0.5  # after a read that failed (a cluster gone): before the next
_CLOSE_WAIT_S = 5.0  # close: how long a listener call in progress may take


class _Map:
    """One cluster's view: its reader, the raw values by key, what was applied."""

    def __init__(self, reader: pulsar.Reader) -> None:
        self.reader = reader
        self.values: dict[str, bytes] = {}
        self.applied: dict[int, PartitionLedger] = {}  # per partition of the identities
        self.read_to: dict[str, tuple[int, int, int]] = {}  # per partition topic, the last position read

    def apply(self, msg: pulsar.Message) -> str | None:
        """The key ``msg`` set or removed; None when it changes nothing (no key; read or applied
        already)."""
        key = msg.partition_key()
        if not key:
            return None
        # A reader reads a partition in position order: a position not after the last one is
        # the same entry dispatched again (pulsar-lite does, docs/refcluster.md), whose older
        # value must not come back.
        mid, topic = msg.message_id(), str(msg.topic_name())
        at = (mid.ledger_id(), mid.entry_id(), mid.batch_index())
        if at <= self.read_to.get(topic, (-1, -1, -2)):
            return None
        self.read_to[topic] = at
        rid = identity_of(msg)
        if rid is not None:
            applied = self.applied.setdefault(rid.partition, PartitionLedger())
            if applied.has(rid):
                return None
            applied.ack(rid, int(time.time() * 1000))
        value = msg.data()
        if value:
            self.values[key] = value
        else:
            self.values.pop(key, None)
        return str(key)


class TableView:
    """Drop-in replacement for :class:`pulsar.tableview.TableView` (see the module doc)."""

    def __init__(self, client: Client, topic: str, subscription_name: str | None, schema: Any) -> None:
        self._client = client
        self._topic, self._subscription, self._schema = topic, subscription_name, schema
        self._lock = threading.RLock()  # the map, and the order of listener calls
        self._listeners: list[Listener] = []
        self._told: list[tuple[str, bytes]] = []  # what a switch changed, for the listeners
        self._closed = False
        self._seldom = Seldom(log)
        self._map = self._build(client.inner)
        self._thread = threading.Thread(target=self._follow, daemon=True, name="hotstandby-table-view")
        self._thread.start()

    def _build(self, client: pulsar.Client) -> _Map:
        """The map of ``client``'s cluster: its topic read from the start to its last message.
        A reader that gets nothing for a while although messages are left is replaced by a new
        one, read from the start again (what was applied is skipped): pulsar-lite may drop a
        reader's connection and then refuse it the subscription back (docs/refcluster.md)."""
        reader = self._reader(client)
        built = _Map(reader)
        last: pulsar.MessageId | None = None
        stalls = 0
        try:
            # The reference broker's last message id names no batch index: pulsar-client may
            # say nothing is left in the middle of the topic's last batch (docs/refcluster.md).
            while reader.has_message_available() or (last is not None and more_in_batch(last)):
                try:
                    msg = reader.read_next(_STALL_MS)
                except pulsar.Timeout:
                    stalls += 1
                    if stalls > _STALLS:
                        raise
                    log.warning("table_view.reader_stalled", topic=self._topic, waited_ms=_STALL_MS,
                                keys=len(built.values))  # fmt: skip
                    _close(reader)
                    reader = built.reader = self._reader(client)
                    continue
                last = msg.message_id()
                built.apply(msg)
        except BaseException:
            _close(reader)
            raise
        return built

    def _reader(self, client: pulsar.Client) -> pulsar.Reader:
        return client.create_reader(self._topic, pulsar.MessageId.earliest, schema=self._schema,
                                    is_read_compacted=True)  # fmt: skip

    # -- the pulsar.TableView surface -------------------------------------------------------

    def get(self, key: str) -> Any:
        """As :meth:`pulsar.tableview.TableView.get`: the value on the cluster in use, or None."""
        value = self._map.values.get(key)
        return None if value is None else self._schema.decode(value)

    def for_each(self, callback: Listener) -> None:
        """As :meth:`pulsar.tableview.TableView.for_each`, on the cluster in use."""
        for key, value in list(self._map.values.items()):
            callback(key, self._schema.decode(value))

    def for_each_and_listen(self, callback: Listener) -> None:
        """As :meth:`pulsar.tableview.TableView.for_each_and_listen`: every entry, then every
        update — across switches (see the module doc)."""
        with self._lock:
            for key, value in list(self._map.values.items()):
                self._call(callback, key, value)
            self._listeners.append(callback)

    def close(self) -> None:
        """As :meth:`pulsar.tableview.TableView.close`; the map stays readable, the view stops
        moving, and listeners are called no more once it returns (unless one of them closes)."""
        with self._lock:
            self._closed = True
            reader = self._map.reader
        self._client.retire(self, reader)
        if threading.current_thread() is not self._thread:
            self._thread.join(_CLOSE_WAIT_S)

    def __len__(self) -> int:
        return len(self._map.values)

    def __str__(self) -> str:
        if self._subscription is None:
            return f"TableView(topic={self._topic})"
        return f"TableView(topic={self._topic}, subscription={self._subscription})"

    def __repr__(self) -> str:
        return self.__str__()

    # -- following the topic ----------------------------------------------------------------

    def _follow(self) -> None:
        """Apply the cluster's updates as they come, and tell the listeners (its thread)."""
        while True:
            with self._lock:
                if self._closed:
                    return
                current, told, self._told = self._map, self._told, []
                for key, value in told:  # what a switch changed comes before any later update
                    self._tell(key, value)
            try:
                msg = current.reader.read_next(SLICE_MS)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException as exc:  # given up in a switch, or its cluster is gone
                if current is self._map and not self._closed:
                    self._seldom.warning("table_view.read_failed", topic=self._topic, error=str(exc))
                    time.sleep(_FAILED_WAIT_S)
                continue
            with self._lock:
                if current is not self._map or self._closed:
                    continue  # read from a cluster left: the new map holds it if it is there
                changed = current.apply(msg)
                if changed is not None:
                    self._tell(changed, current.values.get(changed, b""))

    def _tell(self, key: str, value: bytes) -> None:
        """(Lock held.) Every listener hears of ``key`` (an empty value: removed)."""
        for listener in list(self._listeners):
            self._call(listener, key, value)

    def _call(self, listener: Listener, key: str, value: bytes) -> None:
        try:
            listener(key, self._schema.decode(value))
        except Exception as exc:  # the application's code (or a removal its schema cannot decode): logged
            self._seldom.warning("table_view.listener_failed", topic=self._topic, error=repr(exc))

    # -- switching (run by the client, its gate closed from store to commit) --------------------

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """The map of the new cluster (its topic read to the end there)."""
        new = self._build(client)

        def commit() -> None:
            with self._lock:
                old, self._map = self._map, new
                # The listeners were told all of the old map: they hear of the difference.
                gone = [(key, b"") for key in old.values if key not in new.values]
                changed = [(k, v) for k, v in new.values.items() if old.values.get(k) != v]
                self._told.extend(changed + gone)
            log.info("table_view.switched", topic=self._topic, to=spec.name, changed=len(changed), removed=len(gone))

        return commit

    def abandon(self) -> None:
        """The client shuts down (it closes the reader with its connection)."""
        with self._lock:
            self._closed = True


def _close(reader: pulsar.Reader) -> None:
    try:
        reader.close()
    except pulsar.PulsarException as exc:
        log.info("table_view.close_failed", error=str(exc))
