"""The reference cluster's etcd: one member (the default) or three (``refcluster up
--etcd-members 3``), the way etcd runs in production.

Members are components of their own: ``etcd`` (always the first), ``etcd-2`` and ``etcd-3``,
each with a client and a peer port (``etcd``/``etcd_peer``, ``etcd_2``/``etcd_2_peer``, ...)
and a data directory ``<dir>/<member>-data``. They form one cluster from the first start; a
member started again with its data directory rejoins it (etcd ignores the initial-cluster
flags once it has data). Clients get every member's endpoint and move to another member when
theirs fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterError, RefClusterError, ValidationError
from hotstandby.refcluster.binaries import find_binaries
from hotstandby.refcluster.etcd_access import ROOT, EtcdAccess
from hotstandby.refcluster.ports import Ports
from hotstandby.refcluster.system import HOST
from hotstandby.settings import Endpoint

__all__ = ["MEMBER_COUNTS", "client_ports", "leader", "member_argv", "member_names", "member_ready", "port_names"]

MEMBER_COUNTS = (1, 3)
_NAMES = ("etcd", "etcd-2", "etcd-3")


def member_names(count: int) -> tuple[str, ...]:
    """The components of an etcd of ``count`` members."""
    if count not in MEMBER_COUNTS:
        raise ValidationError("etcd-members", f"the reference etcd runs 1 or 3 members, not {count}")
    return _NAMES[:count]


def port_names(count: int) -> tuple[str, ...]:
    """The client and peer port of each member."""
    return tuple(port for name in member_names(count) for port in (name, f"{name}-peer"))


def client_ports(ports: Ports, count: int) -> tuple[int, ...]:
    return tuple(ports.of(name) for name in member_names(count))


def member_argv(name: str, count: int, ports: Ports, directory: Path, access: EtcdAccess) -> list[str]:
    """Member ``name``'s command line for a first start on empty data."""
    peers = {member: f"http://{HOST}:{ports.of(f'{member}-peer')}" for member in member_names(count)}
    client = access.member_url(ports.of(name))
    client = client if access.secure else f"http://{client}"  # clients name it without a scheme
    return [
        find_binaries().etcd, "--name", name, "--data-dir", str(directory / f"{name}-data"),
        "--listen-client-urls", client, "--advertise-client-urls", client,
        "--listen-peer-urls", peers[name], "--initial-advertise-peer-urls", peers[name],
        "--initial-cluster", ",".join(f"{member}={url}" for member, url in peers.items()),
        "--initial-cluster-state", "new", "--initial-cluster-token", "hs-ref",
        "--log-level", "warn", "--unsafe-no-fsync", *access.server_args(),
        # As etcd is run in production: history older than 10 minutes is compacted, so the
        # database stops growing with every write (a long soak would otherwise show it).
        "--auto-compaction-mode", "periodic", "--auto-compaction-retention", "10m",
    ]  # fmt: skip


def member_ready(member: EtcdAccess, namespace: str, user: str | None) -> Callable[[], None]:
    """A readiness check of one member (``member`` names only its port): one read answered."""
    settings = member.settings(namespace, user, timeout=1.0)

    def check() -> None:
        with ConfigCenter.open(settings) as center:
            center.clusters()

    return check


def leader(access: EtcdAccess, ports: Ports, count: int, *, timeout: float = 2.0) -> str:
    """The member that leads now, as the first member that answers reports it."""
    from hotstandby.configcenter.etcd import EtcdStore  # grpc: only when asked

    security = access.security(ROOT)
    for name in member_names(count):
        store = EtcdStore([Endpoint(HOST, ports.of(name))], timeout=timeout, security=security)
        try:
            status = store.call(lambda c: c.status())
        except ConfigCenterError:
            continue  # down or cut off: ask the next
        finally:
            store.close()
        if status.leader is not None:
            return str(status.leader.name)
    raise RefClusterError("no etcd member answers with a leader")
