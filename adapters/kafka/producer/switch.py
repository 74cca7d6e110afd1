"""A Kafka ``Producer``'s part in the switch protocol
(:mod:`hotstandby.failover.switch_protocol`):

* ``drain`` — a planned switch: the old cluster acknowledges what it has, if it answers;
* ``store`` — nothing: what the producer keeps (pending, window) moves with it;
* ``connect`` — a raw producer of the new cluster that answers (transactions initialised
  there), and what proves window records there: MirrorMaker 2's position (the plan's link,
  ``replication_progress``) and what it holds from before (``held_records``);
* ``move`` — purge the old client, make the new one current, and re-send in order what the
  outbox says (every pending record and every window record not proven on the new cluster);
  the producer's lock is held, so new records follow the re-send;
* ``resume`` — the replay's transaction is committed, and the old client closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from confluent_kafka import KafkaException
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.mm2.replication_progress import read_positions
from hotstandby.adapters.kafka.producer.held_records import Held, still_held
from hotstandby.adapters.kafka.producer.partition_counts import METADATA_TIMEOUT_S
from hotstandby.adapters.kafka.producer.sending import Sender
from hotstandby.adapters.kafka.producer.state import ProducerState
from hotstandby.adapters.kafka.producer.transactions import Transactions
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.failover.outbox import ReplicatedTo
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["ProducerSwitch"]

log = get_logger("hotstandby.kafka.producer")

_Move = tuple[RawProducer, dict[tuple[str, int], ReplicatedTo], Held | None]


class ProducerSwitch:
    """Implements :class:`~hotstandby.failover.switch_protocol.SwitchParticipant`."""

    peer_labels = None  # a producer waits for nobody

    def __init__(
        self,
        state: ProducerState,
        sender: Sender,
        transactions: Transactions,
        connect: Callable[[ClusterSpec], RawProducer],
    ) -> None:
        self._s = state
        self._sender = sender
        self._transactions = transactions
        self._connect = connect
        self._move: _Move | None = None  # built by connect, taken by move
        self._old: RawProducer | None = None  # given up by move, closed by resume

    def drain(self, plan: SwitchPlan) -> None:
        s = self._s
        drain_s = plan.drain_timeout_s
        if s.outbox.pending and probe_cluster(s.spec, timeout=min(1.0, drain_s)).ok:
            s.inner.flush(drain_s)

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to store: what the producer keeps (pending, window) moves with it."""

    def connect(self, plan: SwitchPlan) -> None:
        new = self._connect(plan.destination)
        try:
            new.list_topics(timeout=METADATA_TIMEOUT_S)  # raises if the new cluster does not answer
            self._transactions.connect(new)
            positions, held = self._window_checks(plan)
        except BaseException:
            new.close()  # a failed attempt leaves no connection behind (the next one makes its own)
            raise
        self._move = (new, positions, held)

    def abort(self, plan: SwitchPlan) -> None:
        self._transactions.abort_connect()
        move, self._move = self._move, None
        if move is not None:
            move[0].close()

    def move(self, plan: SwitchPlan) -> None:
        assert self._move is not None, "move without connect"
        (new, positions, held), self._move = self._move, None
        s = self._s
        # Held until resume: a transactional call in progress ends first, the application's
        # next one waits for the replay's transaction.
        self._transactions.lock.acquire()
        try:
            with s.lock:
                s.generation += 1
                if s.quiet is not None:  # its records are pending: the replay sends them, each reported
                    s.quiet.clear()
                    s.quiet_failed = False
                self._old = s.inner
                self._old.purge(in_queue=True, in_flight=True, blocking=False)
                s.inner, s.spec = new, plan.destination
                self._transactions.move(self._old, new, plan)
                replay = s.outbox.replay(plan.current.active, positions, s.options.timestamp_skew_ms, held)
                s.trimmed += replay.trimmed
                s.held += replay.held
                self._transactions.begin_replay(new, replay.records)
                self._sender.replay(new, replay.records)
                s.resent += len(replay.records)
                s.switches += 1
        except BaseException:
            self._transactions.lock.release()
            raise
        log.info(
            "producer.switched",
            client=s.options.client_id,
            source=plan.current.active,
            to=plan.target.active,
            epoch=plan.target.epoch,
            resent=len(replay.records),
            replicated=replay.trimmed,
            held=replay.held,
        )

    def resume(self, plan: SwitchPlan) -> None:
        old, self._old = self._old, None
        closable = self._transactions.resume(old, plan)
        if old is not None:
            # Callbacks of the old client are ignored (older generation). Purging what it had in
            # flight is a gap: under the gapless guarantee (quiet) it raises its fatal error here.
            with contextlib.suppress(KafkaException):
                old.poll(0)
            if closable:
                old.close()  # nothing is left in it (purged): it stops reconnecting to the old cluster

    def _window_checks(self, plan: SwitchPlan) -> tuple[dict[tuple[str, int], ReplicatedTo], Held | None]:
        """What proves window records on the new cluster: MM2's position there (the plan's link),
        and what it holds from before (held_records; not in transactions: they may abort)."""
        s = self._s
        target, timeout = plan.destination, min(METADATA_TIMEOUT_S, plan.drain_timeout_s + 1)
        link: Link | None = plan.links.get((plan.current.active, target.name))
        positions = read_positions(target, link, timeout=timeout) if link and s.outbox.in_window else {}
        with s.lock:  # produce() adds to the window meanwhile
            stored_there = {} if self._transactions.enabled else s.outbox.stored_on(target.name)
        return positions, still_held(target, stored_there, timeout=timeout)
