"""What the parts of a Kafka ``Consumer`` share, in one place: the cluster in use and its raw
consumer, the topics, the ack tracker (every position: handed out, processed, acknowledged)
and the ledgers, under one lock.

The parts — fetching (``fetch``), committing (``commit``), rebalances
(``rebalance``) and the switch (``switch``) — each keep only their own
bookkeeping and reach this state; the public class (``consumer``) delegates to them.

The contract every part keeps:

* Every field is read and changed with ``lock`` held (a fetch waits in librdkafka with it
  held; the switch takes it after closing the gate, so nothing is fetched, handed out or
  committed while it moves). Callbacks into the application run with it held too, as
  confluent-kafka runs them inside ``poll``.
* One writer per field: ``inner`` and ``spec`` — the constructor and the switch's ``move``;
  ``topics`` and ``logical`` — subscribing and rebalances (``rebalance``), ``manual`` with
  ``logical`` — ``assign``; ``late_copies`` — rebalances and fetching (copies found missing); ``paused`` — ``pause``/``resume`` (``extras``);
  ``closing`` — ``close``; ``lost_tells`` — the rebalance callbacks, emptied by
  :meth:`ConsumerState.tell_lost`.
* ``acks`` and ``ledgers`` change only through their own methods, which keep them consistent
  with each other; any part may call them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer as RawConsumer

from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.adapters.kafka.consumer.group_protocol import group_settings, incremental
from hotstandby.adapters.kafka.consumer.late_copies import LateCopies
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import RouteFollower
from hotstandby.failover.ledger.ack_tracker import AckTracker
from hotstandby.failover.ledger.ownership import Ledgers
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.logs import Seldom, get_logger

__all__ = ["ConsumerState", "Slot"]

log = get_logger("hotstandby.kafka.consumer")

Slot = tuple[str, int]  # (physical topic, partition)


class ConsumerState:
    """The one place a consumer's state lives (see the module doc)."""

    inner: RawConsumer  # the raw consumer of the cluster in use
    spec: ClusterSpec  # the cluster in use

    def __init__(
        self,
        *,
        options: ClientOptions,
        group: str,
        follower: RouteFollower,
        ledger_store: LedgerStore,
        raw_config: dict[str, Any],
        clock: Callable[[], float],
    ) -> None:
        self.options = options
        self.group = group
        self.follower = follower
        self.ledger_store = ledger_store
        self._raw_config = raw_config
        # Per raw consumer (by id), whether its group assigns incrementally (group_protocol).
        self._incremental: dict[int, bool] = {}
        self._clock = clock
        # Entered on every poll: the RLock itself (C); the gate's condition only to wait for a switch.
        self.lock = threading.RLock()
        self.gate = SwitchGate(self.lock)
        self.topics: list[str] = []
        self.logical: dict[str, str] = {}  # physical topic -> logical topic
        self.late_copies = LateCopies()  # subscribed copies the cluster in use did not have
        self.acks = AckTracker()  # ledgers, records handed out, every position
        self.ledgers = Ledgers(ledger_store, self.acks, group=group, owner=options.client_id)
        self.seldom = Seldom(log)  # events that can happen per record
        self.closing = False
        # Logical partitions the application paused: kept paused on every cluster until resumed.
        self.paused: set[Slot] = set()
        # Logical partitions assigned by the application (assign), not by a group: kept on
        # every cluster until unassigned.
        self.manual: set[Slot] = set()
        # The application's on_lost calls of a fetch that also got an error event: confluent-kafka
        # returns the error first and serves the loss queued behind it at the next poll; a batch
        # fetch served both at once (see Fetcher.next).
        self.lost_tells: list[Callable[[], None]] = []

    def tell_lost(self) -> None:
        """The application's on_lost calls held back, in order."""
        while self.lost_tells:
            self.lost_tells.pop(0)()

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """The application's new credentials: for the cluster in use and the next ones."""
        self.inner.set_sasl_credentials(username, password)
        self._raw_config.update({"sasl.username": username, "sasl.password": password})

    def connect(self, spec: ClusterSpec, *, joins: bool = True) -> RawConsumer:
        """A raw consumer of ``spec``: the cluster's client overrides, then the user's config,
        and the group protocol it ``joins`` with (:mod:`.group_protocol`)."""
        config = {"auto.offset.reset": "earliest", **spec.client_config("consumer"), **self._raw_config}
        if joins:
            config.update(group_settings(spec, config))
        raw = RawConsumer(with_logger({**config, "bootstrap.servers": spec.url}))
        if joins:
            if len(self._incremental) > 8:  # the consumers of clusters left long ago
                self._incremental.pop(next(iter(self._incremental)))
            self._incremental[id(raw)] = incremental(config)
        return raw

    @property
    def incremental(self) -> bool:
        """Whether the group of the raw consumer in use assigns incrementally: its rebalance
        callbacks get the partitions added or taken only, and librdkafka refuses a whole
        assignment there."""
        return self._incremental.get(id(self.inner), False)

    def now_ms(self) -> int:
        """Wall-clock milliseconds, for acknowledgement times in the ledgers (their age GC)."""
        return int(self._clock() * 1000)

    def logical_of(self, physical: str) -> str:
        return self.logical.get(physical, physical)

    def store_deadline(self) -> float:
        """When a store that must succeed (a synchronous commit, a switch, close) gives up."""
        return time.monotonic() + self.options.settings.etcd_timeout
