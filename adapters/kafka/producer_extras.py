"""The part of confluent-kafka's Producer surface that is not about producing records across
a switch: metadata and credentials of the cluster in use, batches, and the transaction methods
(on the cluster in use: producer_txn; ``send_offsets_to_transaction`` is not offered,
docs/kafka-api.md); and the producer's part in the switch protocol, kept off that surface."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer_txn import NO_OFFSETS, Transactions
from hotstandby.adapters.kafka.surface import DeliveryCallback, not_supported
from hotstandby.failover.switch_protocol import SwitchPlan

if TYPE_CHECKING:
    from hotstandby.adapters.kafka.producer import Producer

__all__ = ["ProducerExtras", "ProducerSwitching"]


def _check_batch(messages: object) -> None:
    """confluent-kafka's checks of a batch, all before any message is produced."""
    if not isinstance(messages, list):
        raise TypeError("messages must be a list")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TypeError(f"Message at index {i} must be a dict")
        for field in ("value", "key"):
            if not isinstance(message.get(field), bytes | str | None):
                raise TypeError(f"Message {field} at index {i} must be bytes or str")
        if "partition" in message and not isinstance(message["partition"], int):
            raise TypeError(f"Message partition at index {i} must be int")
        if "timestamp" in message:
            raise NotImplementedError("Message timestamps are not currently supported in batch mode")


class ProducerExtras:
    """Methods of :class:`hotstandby.adapters.kafka.Producer` built on its ``produce`` and on the
    raw producer in use."""

    _inner: RawProducer
    _lock: threading.RLock
    _raw_config: dict[str, Any]
    _transactions: Transactions

    produce: Callable[..., None]

    def produce_batch(
        self,
        topic: str,
        messages: list[dict[str, Any]],
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
    ) -> int:
        """As :meth:`confluent_kafka.Producer.produce_batch`: the batch is checked first, then
        each message (a dict: ``value``, ``key``, ``partition``, ``callback``) is produced as by
        :meth:`produce`; one that fails gets an ``_error`` (a ``KafkaError``). Returns how many
        were queued."""
        _check_batch(messages)
        queued = 0
        for message in messages:
            try:
                self.produce(topic, message.get("value"), message.get("key"), message.get("partition", partition),
                             message.get("callback") or on_delivery, headers=message.get("headers"))  # fmt: skip
            except BufferError as exc:
                message["_error"] = KafkaError(KafkaError._QUEUE_FULL, str(exc))
            except KafkaException as exc:
                message["_error"] = exc.args[0]
            else:
                queued += 1
        return queued

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """The metadata of the cluster in use (``ClusterMetadata``), as confluent-kafka's."""
        return self._inner.list_topics(topic=topic, timeout=timeout)

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The id of the cluster in use."""
        cluster: str | None = self._inner.cluster_id(timeout=timeout)
        return cluster

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New SASL credentials for the cluster in use and every cluster the producer moves to."""
        with self._lock:
            self._inner.set_sasl_credentials(username, password)
            self._raw_config.update({"sasl.username": username, "sasl.password": password})

    def init_transactions(self, timeout: float = -1) -> None:
        """As confluent-kafka's, on the cluster in use (a switch initialises the next cluster
        with the same ``transactional.id``)."""
        self._transactions.init_transactions(timeout)

    def begin_transaction(self) -> None:
        """As confluent-kafka's, on the cluster in use; after a switch ended the transaction,
        raises its abortable error until :meth:`abort_transaction`."""
        self._transactions.begin_transaction()

    def commit_transaction(self, timeout: float = -1) -> None:
        """As confluent-kafka's; a transaction a switch ended raises an abortable
        ``KafkaException`` (``txn_requires_abort()``): abort it and begin again."""
        self._transactions.commit_transaction(timeout)

    def abort_transaction(self, timeout: float = -1) -> None:
        """As confluent-kafka's: records not delivered get a purge error; none is sent again."""
        self._transactions.abort_transaction(timeout)

    def send_offsets_to_transaction(self, positions: Any, group_metadata: Any, timeout: float = -1) -> None:
        """Not supported (docs/kafka-api.md): offsets committed in a transaction bypass the
        consumer's ack ledger."""
        not_supported("send_offsets_to_transaction", NO_OFFSETS)


class ProducerSwitching:
    """A producer's part in the switch protocol (a ``SwitchParticipant``), kept off the
    confluent-kafka surface of :class:`Producer`."""

    peer_labels = None  # a producer waits for nobody

    def __init__(self, producer: Producer) -> None:
        self._producer = producer

    def drain(self, plan: SwitchPlan) -> None:
        self._producer._switch_drain(plan)

    def store(self, plan: SwitchPlan) -> None:
        self._producer._switch_store(plan)

    def connect(self, plan: SwitchPlan) -> None:
        self._producer._switch_connect(plan)

    def move(self, plan: SwitchPlan) -> None:
        self._producer._switch_move(plan)

    def resume(self, plan: SwitchPlan) -> None:
        self._producer._switch_resume(plan)

    def abort(self, plan: SwitchPlan) -> None:
        self._producer._switch_abort(plan)
