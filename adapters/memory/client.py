"""What the memory Producer and Consumer share: the route follower on a config center passed
in, the cluster connection, the switch gate, and a deterministic wait for a switch."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hotstandby.adapters.memory.cluster import BrokerUnavailable, MemoryCluster
from hotstandby.adapters.memory.world import lookup
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteClient, RouteFollower
from hotstandby.failover.switch_events import ClientCounts
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switch_protocol import SwitchParticipant

__all__ = ["MemoryClient", "connect"]

Clock = Callable[[], float]


def connect(spec: ClusterSpec) -> MemoryCluster:
    """The in-memory cluster ``spec`` names; :class:`BrokerUnavailable` when it does not answer."""
    host, port = spec.endpoints()[0]
    try:
        cluster = lookup(f"{host}:{port}")
    except LookupError as exc:
        raise BrokerUnavailable(str(exc)) from None
    if not cluster.alive:
        raise BrokerUnavailable(f"cluster {spec.name} does not answer")
    return cluster


class MemoryClient(RouteClient):
    """Base of the memory facades: ``_lock`` guards the client state and carries the gate."""

    def _setup(self, options: ClientOptions, role: str, center: ConfigCenter | None,
               labels: dict[str, str] | None = None) -> tuple[ClusterSpec, MemoryCluster]:  # fmt: skip
        """Read the route (through ``center``, else etcd as the options say) and connect to its
        active cluster; :meth:`_follow_route` starts following it once the client is ready."""
        self.options = options
        self._lock = threading.RLock()
        self.gate = SwitchGate(self._lock)
        self._follower = RouteFollower(options, "memory", role=role, labels=labels, center=center)
        try:
            spec = self._follower.initial_cluster
            return spec, connect(spec)
        except BaseException:
            self._follower.close()
            raise

    def _follow_route(self, participant: SwitchParticipant, spec: Callable[[], ClusterSpec],
                      counts: Callable[[], ClientCounts] | None = None) -> None:  # fmt: skip
        """Take part in switches through ``participant``; ``spec``: the cluster in use."""
        try:
            self._follower.join(participant, self.gate, spec, counts=counts)
        except BaseException:
            self._follower.close()
            raise

    def wait_for_route(self, epoch: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the client runs on ``epoch`` or a later one with
        no switch running or waiting: a test's way to let a flip take effect before its next
        step. True when it did."""
        deadline = time.monotonic() + timeout
        switcher = self._follower.switcher
        while True:
            left = deadline - time.monotonic()
            if switcher is None or left <= 0:
                return False
            if switcher.wait_idle(min(left, 0.05)):
                if self.route.epoch >= epoch:
                    return True
                time.sleep(0.0002)  # the change is on its way from the watcher: let it run

    def _await_gate(self, timeout: float | None) -> bool:
        """With the lock held: wait while a switch holds the gate (at most ``timeout`` s; None:
        no limit); True when it is open."""
        if not self.gate.closed:
            return True
        return self.gate.wait_open(timeout)
