"""The Pulsar ``Client``'s part in the switch protocol (:mod:`hotstandby.failover.switch_protocol`):
the client moves its producers, consumers, readers and table views as one.

Each of them is a :class:`Member`: in ``connect`` it *prepares* its part on the new cluster
(made, not in use yet) and returns the commit that puts it in use, which ``move`` runs for every
member under the client's lock (a commit must not fail: everything that can fail is done in
``prepare``). Producers are also :class:`SendingMember` (``drain`` the old cluster; ``release``
what a failed attempt held), consumers :class:`ReceivingMember` (``store`` their subscription's
acknowledgements; what they handed out is reset with their subscription's state).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulsar

from hotstandby.adapters.pulsar.client.state import ClientState
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["ClientSwitch", "Member", "ReceivingMember", "SendingMember", "close_quietly"]

log = get_logger("hotstandby.pulsar.client")

Commit = Callable[[], None]


class Member(Protocol):
    """A producer, consumer, reader or table view of a client, in a switch."""

    def prepare(self, client: pulsar.Client, spec: ClusterSpec, source: str) -> Commit:
        """``connect``: make this member's part on ``spec``'s cluster through ``client`` (the
        cluster left is ``source``), not in use yet; raise if it cannot be. Returns the commit
        ``move`` runs to put it in use."""
        ...


class SendingMember(Member, Protocol):
    """A producer: it drains the old cluster, and holds sends while its switch runs."""

    def drain(self, old: ClusterSpec) -> None:
        """``drain``: the old cluster acknowledges what it has (bounded)."""
        ...

    def release(self) -> None:
        """The attempt failed: send what was held for it, on the cluster in use."""
        ...


class Resettable(Protocol):
    """What a consumer's subscription state offers the switch."""

    lock: threading.RLock

    def reset(self) -> None: ...


class ReceivingMember(Member, Protocol):
    """A consumer: its subscription's acknowledgements are stored before anyone reads on the
    new cluster, and what it handed out on the old one is forgotten in ``move``."""

    @property
    def state(self) -> Resettable: ...

    def store(self) -> None:
        """``store``: the subscription's acknowledgements into the ledgers (raises without etcd)."""
        ...

    def handed_count(self) -> int:
        """Messages handed out and not acknowledged yet."""
        ...


@dataclass
class _Move:
    """What ``connect`` built for the new cluster, put in place by ``move``."""

    client: pulsar.Client
    spec: ClusterSpec
    producers: list[SendingMember]
    consumers: list[ReceivingMember]
    commits: list[Commit] = field(default_factory=list)
    old: pulsar.Client | None = None


class ClientSwitch:
    """Implements :class:`~hotstandby.failover.switch_protocol.SwitchParticipant` for a client's
    ``state`` (the cluster in use and the members); ``connect`` makes a pulsar.Client."""

    def __init__(
        self, options: ClientOptions, state: ClientState, connect: Callable[[ClusterSpec], pulsar.Client]
    ) -> None:
        self._options = options
        self._s = state
        self._connect = connect
        self._move: _Move | None = None

    @property
    def peer_labels(self) -> Mapping[str, str] | None:
        """With consumers, every other client of the route stores its acknowledgements before
        this one hands out anything on the new cluster (another process with a consumer of the
        same subscription)."""
        with self._s.lock:
            return {} if self._s.consumers else None

    def _senders(self) -> list[SendingMember]:
        return list(self._s.members()[0])

    def _receivers(self) -> list[ReceivingMember]:
        return list(self._s.members()[1])

    def drain(self, plan: SwitchPlan) -> None:
        for producer in self._senders():
            producer.drain(plan.source)

    def store(self, plan: SwitchPlan) -> None:
        consumers = self._receivers()
        # Nothing is handed out now (the gate is closed). The application gets the drain timeout
        # to acknowledge what it holds: a consumer of another process reads the copies of those
        # messages on the new cluster once this one stored, and must find them acknowledged
        # there, not acknowledged here a moment after it handed them out again.
        settled = wait_until(
            lambda: not any(c.handed_count() for c in consumers), plan.drain_timeout_s, first=0.005, most=0.05
        )
        if not settled:
            log.info(
                "client.unacknowledged_at_switch",
                client=self._options.client_id,
                messages=sum(c.handed_count() for c in consumers),
                waited_s=plan.drain_timeout_s,
            )
        # Needs etcd: if it fails, the consumers go on with the old cluster until the next attempt.
        for consumer in consumers:
            consumer.store()

    def connect(self, plan: SwitchPlan) -> None:
        producers, consumers, others = self._s.members()  # none is made while the gate is closed
        spec = plan.destination
        self._move = move = _Move(self._connect(spec), spec, list(producers), list(consumers))
        members: list[Member] = [*producers, *consumers, *others]
        for member in members:
            move.commits.append(member.prepare(move.client, spec, plan.source.name))

    def abort(self, plan: SwitchPlan) -> None:
        move, self._move = self._move, None
        if move is not None:
            close_quietly(move.client)  # and with it what the members made there
        for producer in self._senders():
            producer.release()

    def move(self, plan: SwitchPlan) -> None:
        move = self._move
        assert move is not None, "move without connect"
        states = list({id(c.state): c.state for c in move.consumers}.values())
        with self._s.lock, contextlib.ExitStack() as held:
            # No acknowledgement between a reset and the consumers' commit: it would reach
            # neither the old cluster's bookkeeping (reset) nor the identities left behind.
            for state in states:
                held.enter_context(state.lock)
            move.old, self._s.inner, self._s.spec = self._s.inner, move.client, move.spec
            for state in states:
                state.reset()  # what was handed out belongs to the old cluster
            for commit in move.commits:
                commit()

    def resume(self, plan: SwitchPlan) -> None:
        move, self._move = self._move, None
        assert move is not None and move.old is not None, "resume without move"
        closer = threading.Thread(target=close_quietly, args=(move.old,), daemon=True, name="hotstandby-pulsar-close")
        closer.start()
        log.info(
            "client.switched",
            client=self._options.client_id,
            source=plan.source.name,
            to=move.spec.name,
            epoch=plan.target.epoch,
            producers=len(move.producers),
            consumers=len(move.consumers),
        )


def close_quietly(closeable: Any) -> None:
    """Close what we give up (its cluster may be dead: pulsar-client bounds the wait)."""
    try:
        closeable.close()
    except pulsar.PulsarException as exc:
        log.info("client.close_failed", what=type(closeable).__name__, error=str(exc))
