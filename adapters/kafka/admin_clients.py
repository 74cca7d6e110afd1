"""One AdminClient per cluster for the whole process, never freed.

librdkafka (2.x) aborts the process (``rd_kafka_enq_once_del_source_return: Assertion
`eonce->refcnt > 0'``) when an AdminClient is freed while one of its requests still waits —
for a coordinator or a broker connection — which happens when the cluster is dead or
restarting, exactly when failover code talks to it. A short ``request_timeout`` made it rarer,
not impossible (seen in a kill-primary drill). Keeping the clients alive removes the race: a
handful of clients per process, one per cluster address.
"""

from __future__ import annotations

import threading

from confluent_kafka.admin import AdminClient

__all__ = ["shared_admin"]

_clients: dict[str, AdminClient] = {}
_lock = threading.Lock()


def shared_admin(bootstrap: str) -> AdminClient:
    """The process's AdminClient for ``bootstrap`` (created on first use)."""
    with _lock:
        client = _clients.get(bootstrap)
        if client is None:
            client = _clients[bootstrap] = AdminClient({"bootstrap.servers": bootstrap})
        return client
