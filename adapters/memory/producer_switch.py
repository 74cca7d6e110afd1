"""The memory producer's switch participant (the core's protocol:
:class:`~hotstandby.failover.switch_protocol.SwitchParticipant`), over the producer's
:class:`~hotstandby.adapters.memory.sending.Sending`: a planned switch sends what is queued to
the old cluster while it answers; the move re-sends, same identity and partition, in order,
every pending record and every window record replication has not provably copied to the new
cluster (:func:`~hotstandby.adapters.memory.world.progress_of`)."""

from __future__ import annotations

from hotstandby.adapters.memory.client import connect
from hotstandby.adapters.memory.cluster import MemoryCluster
from hotstandby.adapters.memory.sending import Sending
from hotstandby.adapters.memory.world import progress_of
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.outbox import ReplicatedTo
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["ProducerSwitch"]

log = get_logger("hotstandby.memory.producer")


class ProducerSwitch:
    """One producer's part in a switch; ``resent`` and ``trimmed`` count across switches."""

    peer_labels = None  # a producer waits for no peers

    def __init__(self, sending: Sending, options: ClientOptions) -> None:
        self._sending = sending
        self._options = options
        self._next: MemoryCluster | None = None  # built by connect(), used by move()
        self._copied: dict[tuple[str, int], ReplicatedTo] = {}
        self.resent = 0
        self.trimmed = 0

    def drain(self, plan: SwitchPlan) -> None:
        """Planned switch: the old cluster takes what is queued, if it answers."""
        with self._sending.lock:
            reports = self._sending.send_queue()
        self._sending.serve(reports)

    def store(self, plan: SwitchPlan) -> None:
        """Nothing to store: a producer's state moves with it."""

    def connect(self, plan: SwitchPlan) -> None:
        self._next = connect(plan.destination)
        self._copied = progress_of(self._next, plan.source.name)

    def move(self, plan: SwitchPlan) -> None:
        assert self._next is not None
        sending = self._sending
        with sending.lock:
            replay = sending.outbox.replay(plan.source.name, self._copied, self._options.timestamp_skew_ms)
            sending.cluster, sending.spec, self._next = self._next, plan.destination, None
            sending.queue = replay.records
            self.resent += len(replay.records)
            self.trimmed += replay.trimmed
        log.info("producer.switched", client=self._options.client_id, source=plan.source.name,
                 to=plan.destination.name, epoch=plan.target.epoch, resent=len(replay.records),
                 replicated=replay.trimmed)  # fmt: skip

    def resume(self, plan: SwitchPlan) -> None:
        """The re-send goes out with the next ``poll``/``flush``, ahead of newer records."""

    def abort(self, plan: SwitchPlan) -> None:
        self._next = None
