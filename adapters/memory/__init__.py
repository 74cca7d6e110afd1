"""In-memory adapter: clusters, replication and drop-in ``Producer`` / ``Consumer`` with
Kafka's method names, built on the failover core — for tests and the failover simulation.

No client library is needed; nothing here opens a socket. A :class:`World` holds the clusters,
their replication links, a clock and a config center over a ``MemoryStore``; the clients take
that config center (``center=``) and the clock (``clock=``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotstandby.adapters.memory.cluster import Clock, MemoryCluster
    from hotstandby.adapters.memory.consumer import Consumer
    from hotstandby.adapters.memory.producer import Producer
    from hotstandby.adapters.memory.world import World

__all__ = ["Clock", "Consumer", "MemoryCluster", "Producer", "World"]

_LAZY = {
    "Clock": "cluster",
    "MemoryCluster": "cluster",
    "Consumer": "consumer",
    "Producer": "producer",
    "World": "world",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from hotstandby.registry import import_adapter_module

        return getattr(import_adapter_module("memory", _LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
