"""What the parts of a Kafka ``Producer`` share, in one place: the cluster in use and its raw
producer, the outbox (what is pending and the replay window), the connection generation, and
the switch's counts, under one lock.

The parts — sending and delivery reports (``sending``), transactions (``transactions``) and
the switch (``switch``) — reach this state; the public class (``producer``) delegates to them.
``produce()`` waits on the lock, which the switch gate is built on, so new records queue behind
a switch's re-send.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.callback_interrupts import CallbackInterrupts
from hotstandby.adapters.kafka.surface import HANDLE_CLOSED, DeliveryCallback
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.identity import RecordId
from hotstandby.failover.outbox import Outbox

if TYPE_CHECKING:
    from hotstandby.adapters.kafka.producer.transactions import Txn

__all__ = ["CLOSED", "ProducerState", "Record"]

_HANDLE_METHODS = frozenset({"list_topics", "cluster_id", "set_sasl_credentials"})


@dataclass(eq=False, slots=True)
class Record:
    """A record the producer took, as it is sent (and sent again) to any cluster."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, str | bytes | None]]
    timestamp: int
    rid: RecordId
    on_delivery: DeliveryCallback | None
    size: int
    reported: bool = False
    txn: Txn | None = None  # the application's transaction it was produced in
    slot: tuple[str, int, int] = ("", 0, 0)  # its key in the outbox: (topic, partition, sequence)

    def __post_init__(self) -> None:
        self.slot = (self.topic, self.partition, self.rid.sequence)


class _Closed:
    """Stands in for the raw producer once closed, failing as confluent-kafka's does."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(HANDLE_CLOSED if name in _HANDLE_METHODS else "Producer has been closed")


class ProducerState:
    """The one place a producer's state lives (see the module doc)."""

    inner: RawProducer  # the raw producer of the cluster in use
    spec: ClusterSpec  # the cluster in use

    def __init__(
        self, options: ClientOptions, raw_config: dict[str, Any], *, max_pending: int, message_timeout_ms: int
    ) -> None:
        self.options = options
        self.raw_config = raw_config  # the application's settings (SASL credentials are updated in it)
        self.max_pending = max_pending  # the application's records allowed in the queue
        self.message_timeout_ms = message_timeout_ms
        self.lock = threading.RLock()
        self.outbox: Outbox[tuple[str, int, int], Record] = Outbox(
            options.replay_window_ms, options.replay_window_bytes
        )
        self.interrupts = CallbackInterrupts()
        self.generation = 0  # of the raw producer in use: reports of an older one are ignored
        self.user_purge = False  # the application's purge() runs: its purge reports are reported
        self.closed = False
        self.resent = 0
        self.trimmed = 0  # window records not re-sent: replication had copied them
        self.held = 0  # window records not re-sent: the new cluster held them from before
        self.switches = 0

    def close(self) -> None:
        """Closed: the raw producer is released and every call refused (lock held)."""
        self.closed = True
        self.inner = _Closed()  # type: ignore[assignment]

    @classmethod
    def closed_stand_in(cls) -> ProducerState:
        """The state of a producer whose ``__init__`` never ran: closed, as confluent-kafka's."""
        state = cls.__new__(cls)
        state.closed, state.inner = True, _Closed()  # type: ignore[assignment]
        state.outbox = Outbox(0, 0)
        return state


CLOSED = ProducerState.closed_stand_in()
