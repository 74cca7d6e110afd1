"""One AdminClient per cluster for the whole process, never freed.

librdkafka (2.x) aborts the process (``rd_kafka_enq_once_del_source_return: Assertion
`eonce->refcnt > 0'``) when an AdminClient is freed while one of its requests still waits —
for a coordinator or a broker connection — which happens when the cluster is dead or
restarting, exactly when failover code talks to it. A short ``request_timeout`` made it rarer,
not impossible (seen in a kill-primary drill). Keeping the clients alive removes the race: a
handful of clients per process, one per cluster address and client settings (a TLS or SASL
cluster's admin client connects with the settings of its definition).

Their librdkafka log lines go to the ``hotstandby.librdkafka`` logger like the other clients'
(``client_logs.py``); confluent-kafka hands them over when a client is polled, and nothing else
polls an admin client, so a daemon thread polls them every second.
"""

from __future__ import annotations

import threading

from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.configcenter.documents import ClusterSpec, Scalar

__all__ = ["shared_admin"]

_clients: dict[tuple[tuple[str, Scalar], ...], AdminClient] = {}
_lock = threading.Lock()
_LOG_POLL_S = 1.0
_pump: list[threading.Thread] = []  # the one log-serving thread, once started


def shared_admin(spec: ClusterSpec) -> AdminClient:
    """The process's AdminClient for ``spec``: its URL and its client settings (created on
    first use)."""
    config = {**spec.client_config("admin"), "bootstrap.servers": spec.url}
    key = tuple(sorted(config.items()))
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = AdminClient(with_logger(config))
            _start_pump()
        return client


def _start_pump() -> None:
    if not _pump:
        _pump.append(threading.Thread(target=_serve_logs, name="hotstandby-admin-logs", daemon=True))
        _pump[0].start()


def _serve_logs() -> None:
    idle = threading.Event()  # never set: the thread lives as long as the process
    while True:
        with _lock:
            clients = list(_clients.values())
        for client in clients:
            client.poll(0)
        idle.wait(_LOG_POLL_S)
