"""``TableView`` of :class:`hotstandby.adapters.pulsar.Client`: pulsar.TableView of the cluster
in use.

A table view holds the latest value of each key of a topic (an empty value removes the key).
Replication copies the topic under its name, so the new cluster's table view, read from the
topic's start, holds the same map: in a switch the view is made anew there (the switch waits
until pulsar-client has read the topic) and replaces the old one. ``get``, ``for_each`` and
``len`` answer from the cluster in use. The listeners of ``for_each_and_listen`` then hear of
what the switch changed — a key whose value there differs from the last one they were given,
a key gone (with the empty value of a removal) — on a thread of the view's own, and not of
the rest again; afterwards of every update, as pulsar-client calls them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.logs import Seldom, get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client import Client

__all__ = ["TableView"]

log = get_logger("hotstandby.pulsar.table_view")

Listener = Callable[[str, Any], None]
_UNDECODABLE = object()  # the schema cannot decode an empty value: removals reach no listener


class TableView:
    """Drop-in replacement for :class:`pulsar.tableview.TableView` (see the module doc)."""

    def __init__(self, client: Client, topic: str, subscription_name: str | None, schema: Any) -> None:
        self._client = client
        self._topic, self._subscription, self._schema = topic, subscription_name, schema
        try:
            self._removed: Any = schema.decode(b"")  # what a listener is given for a removal
        except Exception:  # a schema of records: pulsar-client cannot hand a removal to a listener either
            self._removed = _UNDECODABLE
        # Orders listener calls: updates, a new listener's first round, the round after a switch.
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._seen: dict[str, Any] = {}  # per key, the last value the listeners were given
        self._seldom = Seldom(log)
        self._token: object = None
        self._inner, self._token = self._create(client.inner)

    def _create(self, client: pulsar.Client) -> tuple[Any, object]:
        """A table view on ``client``'s cluster, and the token its updates carry (they reach the
        listeners only while it is the one in use)."""
        view = client.create_table_view(self._topic, self._subscription, self._schema)
        token = object()
        # pulsar-client keeps the callback: it holds this view weakly, not to keep it alive.
        ref = weakref.ref(self)

        def on_update(key: str, value: Any) -> None:
            me = ref()
            if me is not None:
                me._updated(token, key, value)

        view.for_each_and_listen(on_update)  # its first round: not in use yet, so for nobody
        return view, token

    # -- the pulsar.TableView surface -------------------------------------------------------

    def get(self, key: str) -> Any:
        """As :meth:`pulsar.tableview.TableView.get`, on the cluster in use."""
        return self._inner.get(key)

    def for_each(self, callback: Listener) -> None:
        """As :meth:`pulsar.tableview.TableView.for_each`, on the cluster in use."""
        self._inner.for_each(callback)

    def for_each_and_listen(self, callback: Listener) -> None:
        """As :meth:`pulsar.tableview.TableView.for_each_and_listen`: every entry, then every
        update — across switches (see the module doc)."""
        with self._lock:
            for key, value in self._entries(self._inner):
                self._seen[key] = value
                self._call(callback, key, value)
            self._listeners.append(callback)

    def close(self) -> None:
        """As :meth:`pulsar.tableview.TableView.close`; the view stops moving."""
        self._client.retire(self, self._inner)

    def __len__(self) -> int:
        return len(self._inner)

    def __str__(self) -> str:
        if self._subscription is None:
            return f"TableView(topic={self._topic})"
        return f"TableView(topic={self._topic}, subscription={self._subscription})"

    def __repr__(self) -> str:
        return self.__str__()

    # -- listeners ----------------------------------------------------------------------------

    def _updated(self, token: object, key: str, value: Any) -> None:
        if token is not self._token:
            return  # a view being made (its first round) or given up: no lock for it
        with self._lock:
            if token is not self._token or not self._listeners:
                return  # a view given up in a switch (or not in use yet), or nobody listens
            self._tell(key, value)

    def _tell(self, key: str, value: Any) -> None:
        """(Lock held.) Every listener hears of ``key``."""
        if self._removed is not _UNDECODABLE and value == self._removed:
            self._seen.pop(key, None)
        else:
            self._seen[key] = value
        for listener in list(self._listeners):
            self._call(listener, key, value)

    def _call(self, listener: Listener, key: str, value: Any) -> None:
        try:
            listener(key, value)
        except Exception as exc:  # the application's code: logged, the view goes on
            self._seldom.warning("table_view.listener_failed", topic=self._topic, error=repr(exc))

    @staticmethod
    def _entries(view: Any) -> list[tuple[str, Any]]:
        entries: list[tuple[str, Any]] = []
        view.for_each(lambda key, value: entries.append((key, value)))
        return entries

    def _catch_up(self, token: object) -> None:
        """After a switch: the listeners hear of what differs on the new cluster."""
        with self._lock:
            if token is not self._token or not self._listeners:
                return  # another switch came first: its own round tells them
            entries = dict(self._entries(self._inner))
            gone = [key for key in self._seen if key not in entries]
            changed = [(k, v) for k, v in entries.items() if k not in self._seen or self._seen[k] != v]
            for key, value in changed:
                self._tell(key, value)
            if self._removed is not _UNDECODABLE:
                for key in gone:
                    self._tell(key, self._removed)
        log.info("table_view.caught_up", topic=self._topic, changed=len(changed), removed=len(gone))

    # -- switching (run by the client, its gate closed from store to commit) --------------------

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Callable[[], None]:
        """The view on the new cluster (read to the end of the topic there)."""
        new, token = self._create(client)

        def commit() -> None:
            with self._lock:
                self._inner, self._token = new, token
                listening = bool(self._listeners)
            if listening:  # not on the switch's thread: the listeners are the application's code
                threading.Thread(target=self._catch_up, args=(token,), daemon=True,
                                 name="hotstandby-table-view").start()  # fmt: skip

        return commit

    def abandon(self) -> None:
        """The client shuts down (it closes the view with its connection)."""
        with self._lock:
            self._listeners.clear()
