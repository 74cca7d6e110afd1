"""The memory consumer's switch participant (the core's protocol:
:class:`~hotstandby.failover.switch_protocol.SwitchParticipant`): store every acknowledgement
(and the claims on owned partitions), leave the old cluster's group, join the new one. There is
no drain step: the memory clusters copy to a cluster that came back empty what it lacks, so
nothing depends on reading the old cluster to its end."""

from __future__ import annotations

import time
from collections.abc import Callable

from hotstandby.adapters.memory.client import connect
from hotstandby.adapters.memory.cluster import MemoryCluster
from hotstandby.adapters.memory.group_reading import GroupReading
from hotstandby.failover.ledger.ack_tracker import AckTracker, LedgerKey
from hotstandby.failover.ledger.ownership import Ledgers
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["ConsumerSwitch"]

log = get_logger("hotstandby.memory.consumer")


class ConsumerSwitch:
    """One consumer's part in a switch. ``store_keys`` stores acknowledgements in the ledger
    within the etcd timeout or raises; ``clock`` gives seconds since the epoch."""

    def __init__(self, reading: GroupReading, acks: AckTracker, ledgers: Ledgers,
                 store_keys: Callable[[set[LedgerKey]], None], clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.peer_labels = {"group": reading.group}  # the group's members store before any moves
        self._reading = reading
        self._acks = acks
        self._ledgers = ledgers
        self._store_keys = store_keys
        self._clock = clock
        self._next: MemoryCluster | None = None  # built by connect(), used by move()

    def drain(self, plan: SwitchPlan) -> None:
        """No drain (see the module docs)."""

    def store(self, plan: SwitchPlan) -> None:
        with self._reading.lock:
            self._reading.alive()
            self._store_keys(self._acks.collect(int(self._clock() * 1000)) | self._ledgers.owned)

    def connect(self, plan: SwitchPlan) -> None:
        self._reading.alive()
        self._next = connect(plan.destination)

    def move(self, plan: SwitchPlan) -> None:
        assert self._next is not None
        reading = self._reading
        with reading.lock:
            self._acks.reset()
            self._ledgers.reset()
            reading.move_to(self._next, plan.destination)
            self._next = None
        log.info("consumer.switched", client=reading.client_id, source=plan.source.name,
                 to=plan.destination.name, epoch=plan.target.epoch)  # fmt: skip

    def resume(self, plan: SwitchPlan) -> None:
        """Reading goes on with the next ``poll``."""

    def abort(self, plan: SwitchPlan) -> None:
        self._next = None
