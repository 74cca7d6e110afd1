"""The Pulsar ``Client``'s part in the switch protocol (:mod:`hotstandby.failover.switch_protocol`):
the client moves its producers, consumers, readers and table views as one (see
:mod:`hotstandby.adapters.pulsar.client.client`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulsar

from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Member
    from hotstandby.adapters.pulsar.consumer.consumer import Consumer
    from hotstandby.adapters.pulsar.producer.producer import Producer
    from hotstandby.adapters.pulsar.reader.reader import Reader
    from hotstandby.adapters.pulsar.reader.table_view import TableView

__all__ = ["Move", "SwitchParticipation", "close_quietly"]

log = get_logger("hotstandby.pulsar.client")


@dataclass
class Move:
    """What ``connect`` built for the new cluster, put in place by ``move``."""

    client: pulsar.Client
    spec: ClusterSpec
    producers: list[Producer]
    consumers: list[Consumer]
    commits: list[Callable[[], None]]
    old: pulsar.Client | None = None


class SwitchParticipation:
    """The switch steps of :class:`~hotstandby.adapters.pulsar.client.client.Client`."""

    options: ClientOptions
    _lock: threading.RLock
    _inner: pulsar.Client
    _spec: ClusterSpec
    _move: Move | None
    _consumers: list[Consumer]
    _connect: Callable[[ClusterSpec], pulsar.Client]
    _members: Callable[[], tuple[list[Producer], list[Consumer], list[Reader | TableView]]]

    @property
    def peer_labels(self) -> Mapping[str, str] | None:
        """With consumers, every other client of the route stores its acknowledgements before
        this one hands out anything on the new cluster (another process with a consumer of the
        same subscription)."""
        with self._lock:
            return {} if self._consumers else None

    def drain(self, plan: SwitchPlan) -> None:
        for producer in self._members()[0]:
            producer.drain(plan.source)

    def store(self, plan: SwitchPlan) -> None:
        consumers = self._members()[1]
        # Nothing is handed out now (the gate is closed). The application gets the drain timeout
        # to acknowledge what it holds: a consumer of another process reads the copies of those
        # messages on the new cluster once this one stored, and must find them acknowledged
        # there, not acknowledged here a moment after it handed them out again.
        settled = wait_until(lambda: not any(c.handed_count() for c in consumers), plan.drain_timeout_s,
                             first=0.005, most=0.05)  # fmt: skip
        if not settled:
            log.info("client.unacknowledged_at_switch", client=self.options.client_id,
                     messages=sum(c.handed_count() for c in consumers), waited_s=plan.drain_timeout_s)  # fmt: skip
        # Needs etcd: if it fails, the consumers go on with the old cluster until the next attempt.
        for consumer in consumers:
            consumer.store()

    def connect(self, plan: SwitchPlan) -> None:
        producers, consumers, others = self._members()  # none is made while the gate is closed
        spec = plan.destination
        self._move = move = Move(self._connect(spec), spec, producers, consumers, [])
        members: list[Member] = [*producers, *consumers, *others]
        for member in members:
            move.commits.append(member.prepare(move.client, spec, plan.source.name))

    def abort(self, plan: SwitchPlan) -> None:
        move, self._move = self._move, None
        if move is not None:
            close_quietly(move.client)  # and with it what the members made there
        for producer in self._members()[0]:
            producer.release()

    def move(self, plan: SwitchPlan) -> None:
        move = self._move
        assert move is not None, "move without connect"
        states = list({id(c.state): c.state for c in move.consumers}.values())
        with self._lock, contextlib.ExitStack() as held:
            # No acknowledgement between a reset and the consumers' commit: it would reach
            # neither the old cluster's bookkeeping (reset) nor the identities left behind.
            for state in states:
                held.enter_context(state.lock)
            move.old, self._inner, self._spec = self._inner, move.client, move.spec
            for state in states:
                state.reset()  # what was handed out belongs to the old cluster
            for commit in move.commits:
                commit()

    def resume(self, plan: SwitchPlan) -> None:
        move, self._move = self._move, None
        assert move is not None and move.old is not None, "resume without move"
        closer = threading.Thread(target=close_quietly, args=(move.old,), daemon=True, name="hotstandby-pulsar-close")
        closer.start()
        log.info("client.switched", client=self.options.client_id, source=plan.source.name, to=move.spec.name,
                 epoch=plan.target.epoch, producers=len(move.producers), consumers=len(move.consumers))  # fmt: skip


def close_quietly(closeable: Any) -> None:
    """Close what we give up (its cluster may be dead: pulsar-client bounds the wait)."""
    try:
        closeable.close()
    except pulsar.PulsarException as exc:
        log.info("client.close_failed", what=type(closeable).__name__, error=str(exc))
