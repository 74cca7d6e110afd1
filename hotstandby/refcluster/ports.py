"""The TCP ports of the reference cluster, all on 127.0.0.1.

Each broker has its client port (named as the component: ``kafka-a``) and, on the real
systems, the others it listens on (``kafka-a-controller``, ``pulsar-a-http``,
``pulsar-a-bookie``). A cluster checks and uses only the ports of its flavour.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, fields, replace

from hotstandby.errors import RefClusterError, ValidationError
from hotstandby.refcluster.system import HOST

__all__ = ["Ports", "check_ports_free"]


@dataclass(frozen=True, kw_only=True)
class Ports:
    """TCP ports of the reference cluster (all on 127.0.0.1)."""

    etcd: int = 2379
    etcd_peer: int = 2380
    # The other members of a three-member etcd (``--etcd-members 3``).
    etcd_2: int = 22379
    etcd_2_peer: int = 22380
    etcd_3: int = 32379
    etcd_3_peer: int = 32380
    kafka_a: int = 9092
    kafka_b: int = 9093
    pulsar_a: int = 6650
    pulsar_b: int = 6651
    # The real systems' other listeners (``--brokers apache``).
    kafka_a_controller: int = 9192
    kafka_b_controller: int = 9193
    pulsar_a_http: int = 8080
    pulsar_b_http: int = 8081
    pulsar_a_bookie: int = 3181
    pulsar_b_bookie: int = 3182

    @classmethod
    def free(cls) -> Ports:
        """Ports the system says are free right now (for tests)."""
        with ExitStack() as stack:
            socks = []
            for _ in fields(cls):
                s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                s.bind((HOST, 0))
                socks.append(s)
            return cls(**{f.name: s.getsockname()[1] for f, s in zip(fields(cls), socks, strict=True)})

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def with_overrides(self, overrides: dict[str, int]) -> Ports:
        """Override by component name (``kafka-a``) or field name (``kafka_a``, ``etcd_peer``)."""
        names = set(self.names())
        changes = {}
        for name, port in overrides.items():
            field_name = name.replace("-", "_")
            if field_name not in names:
                raise ValidationError("port", f"unknown port name {name!r}; known: {', '.join(sorted(names))}")
            if not 0 < int(port) < 65536:
                raise ValidationError("port", f"{name}: {port} is not a TCP port")
            changes[field_name] = int(port)
        return replace(self, **changes)

    def of(self, component: str) -> int:
        return int(getattr(self, component.replace("-", "_")))


def check_ports_free(ports: Ports, names: Iterable[str]) -> None:
    """Refuse to start when a port is taken: a broker already there would pass our readiness probe."""
    busy = []
    for name in names:
        port = ports.of(name)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((HOST, port))
            except OSError:
                busy.append(f"{name.replace('_', '-')}={port}")
    if busy:
        raise RefClusterError(f"ports in use on {HOST}: {', '.join(busy)}; choose others with --port NAME=PORT")
