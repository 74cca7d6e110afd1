"""The one switch protocol: how a client takes part in moving to another cluster.

The core runs every switch the same way (:func:`run_switch`, on the :class:`Switcher`'s
thread); a client — the Kafka ``Producer`` and ``Consumer``, the Pulsar ``Client`` with all its
producers, consumers and readers, the in-memory clients, the Spark reader — implements the
steps of :class:`SwitchParticipant`:

1. ``drain(plan)`` — a planned switch: the old cluster finishes what it has (bounded by the
   drain timeout); reads and sends go on.
2. the gate closes (:class:`~hotstandby.failover.switch_gate.SwitchGate`): nothing is handed out
   or sent from here until the new cluster is in use.
3. ``store(plan)`` — store everything that must survive the move (acknowledgements in the
   ledger, before the broker commit). Raise if it cannot be: the switch is retried.
4. the core publishes ``switching`` and, for a participant with ``peer_labels``, waits (bounded)
   until the other clients of the route with those labels stored theirs too.
5. ``connect(plan)`` — build what the new cluster needs, not yet in use. Raise if the new
   cluster does not answer.
6. ``move(plan)`` — give up the old cluster and make the new one current. Must not fail:
   everything that can fail is done before.
7. the gate opens; ``resume(plan)`` — re-send, hand out again, leave the old cluster (in the
   background).

After a failure in steps 3 to 5 the core calls ``abort(plan)``: drop what ``connect`` built; the client
goes on with the cluster it has, and the :class:`Switcher` retries with backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.failover.switching import SwitchState
from hotstandby.logs import get_logger

__all__ = ["PeerWait", "SwitchParticipant", "SwitchPlan", "run_switch"]

log = get_logger("hotstandby.switch")


@dataclass(frozen=True)
class SwitchPlan:
    """What one switch attempt needs from the config center, read once before it gives up
    anything: a failure to read it leaves the client where it is."""

    current: Route
    target: Route
    source: ClusterSpec  # the cluster in use
    destination: ClusterSpec  # the target's active cluster, checked to be of the client's kind
    links: Mapping[tuple[str, str], Link]  # replication links, for translation and trimming
    drain_timeout_s: float


@runtime_checkable
class SwitchParticipant(Protocol):
    """A client object tree that moves between clusters as one (see the module docs).

    There is one way to implement it: a class of its own, in ``switch.py`` of the client's
    package (``<client>_switch.py`` in a flat one), built from collaborators passed in — the
    client's state object, under the lock the client's gate is built on, and the parts that
    act on it — never reaching into the client's private attributes. The client hands that
    object to its :class:`~hotstandby.failover.follower.RouteFollower`.
    """

    @property
    def peer_labels(self) -> Mapping[str, str] | None:
        """Presence labels of the peers to wait for after ``store`` (a consumer's group; ``{}``:
        every client of the route), or None (no wait). An attribute will do."""

    def drain(self, plan: SwitchPlan) -> None: ...

    def store(self, plan: SwitchPlan) -> None: ...

    def connect(self, plan: SwitchPlan) -> None: ...

    def move(self, plan: SwitchPlan) -> None: ...

    def resume(self, plan: SwitchPlan) -> None: ...

    def abort(self, plan: SwitchPlan) -> None: ...


#: ``wait_peers(target, timeout, labels)``: the clients still behind when ``timeout`` ran out.
PeerWait = Callable[[Route, float, Mapping[str, str]], list[str]]


def run_switch(
    participant: SwitchParticipant,
    gate: SwitchGate,
    plan: SwitchPlan,
    set_state: Callable[[SwitchState], None],
    wait_peers: PeerWait,
) -> None:
    """Carry one switch attempt out; raises (after ``abort``) when it failed."""
    set_state(SwitchState.DRAINING)
    participant.drain(plan)
    with gate.held():
        try:
            participant.store(plan)
            set_state(SwitchState.SWITCHING)  # published: this client's acknowledgements are stored
            labels = participant.peer_labels
            if labels is not None:
                behind = wait_peers(plan.target, plan.drain_timeout_s, labels)
                if behind:
                    log.warning("switch.peers_behind", route=plan.target.name, epoch=plan.target.epoch,
                                clients=behind, **labels)  # fmt: skip
            participant.connect(plan)
        except BaseException:
            participant.abort(plan)
            raise
        participant.move(plan)
    participant.resume(plan)
