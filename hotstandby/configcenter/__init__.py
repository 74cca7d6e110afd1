"""The config center: where clusters, routes, links and ledgers live (etcd by default).

:class:`ConfigCenter` is the typed API; it runs on any :class:`KVStore` —
:class:`~hotstandby.configcenter.etcd.EtcdStore` in production, :class:`MemoryStore` in
unit tests. Both pass the same contract test suite.
"""

from hotstandby.configcenter.center import ConfigCenter, Snapshot, default_actor
from hotstandby.configcenter.keys import Keys
from hotstandby.configcenter.memory import MemoryStore
from hotstandby.configcenter.store import Event, KeyValue, KVStore, WatchStream
from hotstandby.configcenter.watcher import RouteChange, RouteWatcher

__all__ = [
    "ConfigCenter",
    "Event",
    "KVStore",
    "KeyValue",
    "Keys",
    "MemoryStore",
    "RouteChange",
    "RouteWatcher",
    "Snapshot",
    "WatchStream",
    "default_actor",
]
