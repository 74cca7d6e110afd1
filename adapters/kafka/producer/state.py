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
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.callback_interrupts import CallbackInterrupts
from hotstandby.adapters.kafka.surface import HANDLE_CLOSED, DeliveryCallback
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.outbox import Outbox

if TYPE_CHECKING:
    from hotstandby.adapters.kafka.producer.expiry import Expiry
    from hotstandby.adapters.kafka.producer.quiet import QuietRuns
    from hotstandby.adapters.kafka.producer.transactions import Txn

__all__ = ["CLOSED", "ProducerState", "Record"]

_HANDLE_METHODS = frozenset({"list_topics", "cluster_id", "set_sasl_credentials"})


class Record:
    """A record the producer took, as it is sent (and sent again) to any cluster: its headers
    are the application's with the record's ``hs-id`` last, in a tuple (the garbage collector
    stops tracking a tuple of strings and bytes; a replay window holds many records)."""

    __slots__ = (
        "headers",
        "key",
        "on_delivery",
        "partition",
        "reported",
        "sequence",
        "size",
        "slot",
        "timestamp",
        "topic",
        "txn",
        "value",
    )  # fmt: skip

    def __init__(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, str | bytes | None], ...],
        timestamp: int,
        sequence: int,
        on_delivery: DeliveryCallback | None,
        size: int,
        txn: Txn | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
        self.sequence = sequence  # the hs-id's sequence in its partition
        self.on_delivery = on_delivery
        self.size = size
        self.txn = txn  # the application's transaction it was produced in
        self.reported = False
        self.slot = (topic, partition, sequence)  # its key in the outbox


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
        # Records produced without a callback, acknowledged through markers (quiet); None when
        # every record carries its own report.
        self.quiet: QuietRuns | None = None
        # The application's message timeout for records with a callback, when the raw producer
        # runs without one (quiet).
        self.expiry: Expiry | None = None
        self.quiet_failed = False  # a marker of the connection in use failed: nothing is settled
        self.fatal: str | None = None  # the connection in use had a fatal error (error_cb)

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
        state.quiet = state.expiry = None
        return state


CLOSED = ProducerState.closed_stand_in()
