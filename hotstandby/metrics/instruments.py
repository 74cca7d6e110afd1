"""The SDK's metrics, in the process-wide registry (their names and labels are in
docs/observability.md).

Label values are bounded: routes, roles, phases, cluster names, watched etcd prefixes, ledger
operations — and client ids for the two per-client gauges, removed when the client closes.
"""

from __future__ import annotations

from hotstandby.metrics.registry import Registry

__all__ = [
    "CALLBACK_ERRORS",
    "CLIENT_CLUSTER",
    "CLIENT_EPOCH",
    "ETCD_WATCHES",
    "ETCD_WATCH_RECONNECTS",
    "FILTERED",
    "LEDGER_STORE_FAILURES",
    "LEDGER_STORE_SECONDS",
    "REGISTRY",
    "RESENT",
    "SWITCHES",
    "SWITCH_DURATION",
]

#: Every metric of the SDK.
REGISTRY = Registry()

SWITCHES = REGISTRY.counter(
    "hotstandby_switches_total",
    "Switch events by route, client role and phase (started, completed, failed, rejected).",
    ("route", "role", "phase"),
)
SWITCH_DURATION = REGISTRY.histogram(
    "hotstandby_switch_duration_seconds",
    "Duration of completed switches, from the start of the switch to the new cluster in use.",
    ("route", "role"),
)
RESENT = REGISTRY.counter(
    "hotstandby_resent_records_total",
    "Records producers sent again to the new cluster on a switch (same identity).",
    ("route", "role"),
)
FILTERED = REGISTRY.counter(
    "hotstandby_filtered_records_total",
    "Records consumers did not hand out: acknowledged before (by identity) or handed out already.",
    ("route", "role"),
)
LEDGER_STORE_SECONDS = REGISTRY.histogram(
    "hotstandby_ledger_store_seconds",
    "Time to store (save) or claim an ack ledger in the config center, failed attempts included.",
    ("op",),
)
LEDGER_STORE_FAILURES = REGISTRY.counter(
    "hotstandby_ledger_store_failures_total",
    "Ledger stores or claims that failed (etcd unreachable, too many concurrent updates).",
    ("op",),
)
ETCD_WATCHES = REGISTRY.gauge(
    "hotstandby_etcd_watches",
    "etcd watches of a key prefix running now, by state: connected, or reconnecting (etcd not answering).",
    ("prefix", "state"),
)
ETCD_WATCH_RECONNECTS = REGISTRY.counter(
    "hotstandby_etcd_watch_reconnects_total",
    "Times an etcd watch of a key prefix connected again after losing its connection.",
    ("prefix",),
)
CLIENT_CLUSTER = REGISTRY.gauge(
    "hotstandby_client_cluster",
    "1 for the cluster each open client uses now (one sample per client).",
    ("route", "client", "role", "cluster"),
)
CLIENT_EPOCH = REGISTRY.gauge(
    "hotstandby_client_epoch",
    "The route epoch each open client runs at.",
    ("route", "client", "role"),
)
CALLBACK_ERRORS = REGISTRY.counter(
    "hotstandby_switch_callback_errors_total",
    "Exceptions raised by the application's hotstandby.on_switch callback (logged, then ignored).",
    ("route", "role"),
)
