"""The part of confluent-kafka's Producer surface that is not about producing records across
a switch: metadata and credentials of the cluster in use, batches, and the transaction methods
(on the cluster in use: ``transactions``; ``send_offsets_to_transaction`` is not offered,
docs/kafka-api.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka import arguments
from hotstandby.adapters.kafka.arguments import batch_arguments
from hotstandby.adapters.kafka.producer.sending import Sender
from hotstandby.adapters.kafka.producer.state import ProducerState
from hotstandby.adapters.kafka.producer.transactions import NO_OFFSETS, Transactions
from hotstandby.adapters.kafka.surface import HANDLE_CLOSED, DeliveryCallback, not_supported
from hotstandby.failover.follower import wait_slices

__all__ = ["ProducerExtras"]


class ProducerExtras:
    """Methods of :class:`hotstandby.adapters.kafka.Producer` built on its ``produce`` and on the
    raw producer in use."""

    _s: ProducerState
    _transactions: Transactions
    _sender: Sender

    produce: Callable[..., None]

    def _refuse_closed(self) -> None:
        """confluent-kafka's error for a closed producer (or one whose ``__init__`` never ran)."""
        if self._s.closed:
            raise RuntimeError("Producer has been closed")

    def poll(self, timeout: float | None = -1) -> int:
        """Serve delivery callbacks; returns how many were served."""
        arguments.timeout(timeout)
        if timeout == 0:  # the usual call after each produce(): nothing to wait for, no slices
            poll = self._s.inner.poll  # first: a closed producer raises
            served = self._sender.served(poll, 0)
            self._sender.settle()
            return served
        served = 0
        for wait in wait_slices(timeout):
            poll = self._s.inner.poll
            served += self._sender.served(poll, wait)
            self._sender.settle()
            if served:
                return served
        return served

    def flush(self, timeout: float | None = -1) -> int:
        """Wait until every record was acknowledged (across switches); returns how many are left."""
        arguments.timeout(timeout)
        for wait in wait_slices(timeout):
            flush = self._s.inner.flush  # first: a closed producer raises
            self._sender.served(flush, wait)
            self._sender.settle()
            if not self._s.outbox.pending:
                break
        return 0 if self._s.closed else self._s.outbox.pending  # as len(producer)

    def produce_batch(
        self,
        topic: str,
        messages: list[dict[str, Any]],
        partition: int = -1,
        callback: DeliveryCallback | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> int:
        """As :meth:`confluent_kafka.Producer.produce_batch`: the arguments are checked first,
        then each message (a dict: ``value``, ``key``, ``partition``, ``headers``, ``callback``)
        is produced as by :meth:`produce`; one that fails gets an ``_error`` (a ``KafkaError``).
        ``callback`` (else ``on_delivery``) reports the messages without a ``callback`` of their
        own. Returns how many were queued."""
        batch_arguments(topic, messages, partition)
        if not messages:
            return 0  # as confluent-kafka's, also once closed
        report = callback if callback is not None else on_delivery
        queued = 0
        for message in messages:
            own = message.get("partition")
            try:
                self.produce(topic, message.get("value"), message.get("key"), partition if own is None else own,
                             message.get("callback") or report, headers=message.get("headers"))  # fmt: skip
            except BufferError as exc:
                message["_error"] = KafkaError(KafkaError._QUEUE_FULL, str(exc))
            except KafkaException as exc:
                message["_error"] = exc.args[0]
            else:
                queued += 1
        return queued

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop records not yet sent; their callbacks get a purge error, as with confluent_kafka."""
        self._refuse_closed()
        with self._s.lock:
            self._s.user_purge = True
            try:
                self._s.inner.purge(in_queue=in_queue, in_flight=in_flight, blocking=blocking)
                self._s.inner.poll(0)
                if self._s.quiet is not None:  # no report tells which went: all are given up
                    self._s.outbox.forget(record.slot for record in self._s.quiet.rest())
            finally:
                self._s.user_purge = False

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """The metadata of the cluster in use (``ClusterMetadata``), as confluent-kafka's."""
        return self._s.inner.list_topics(topic=topic, timeout=timeout)

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The id of the cluster in use."""
        cluster: str | None = self._s.inner.cluster_id(timeout=timeout)
        return cluster

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """New SASL credentials for the cluster in use and every cluster the producer moves to."""
        if self._s.closed:
            raise RuntimeError(HANDLE_CLOSED)
        with self._s.lock:
            self._s.inner.set_sasl_credentials(username, password)
            self._s.raw_config.update({"sasl.username": username, "sasl.password": password})

    def init_transactions(self, timeout: float = -1) -> None:
        """As confluent-kafka's, on the cluster in use (a switch initialises the next cluster
        with the same ``transactional.id``)."""
        self._refuse_closed()
        self._transactions.init_transactions(timeout)

    def begin_transaction(self) -> None:
        """As confluent-kafka's, on the cluster in use; after a switch ended the transaction,
        raises its abortable error until :meth:`abort_transaction`."""
        self._refuse_closed()
        self._transactions.begin_transaction()

    def commit_transaction(self, timeout: float = -1) -> None:
        """As confluent-kafka's; a transaction a switch ended raises an abortable
        ``KafkaException`` (``txn_requires_abort()``): abort it and begin again."""
        self._refuse_closed()
        self._transactions.commit_transaction(timeout)

    def abort_transaction(self, timeout: float = -1) -> None:
        """As confluent-kafka's: records not delivered get a purge error; none is sent again."""
        self._refuse_closed()
        self._transactions.abort_transaction(timeout)

    def send_offsets_to_transaction(self, positions: Any, group_metadata: Any, timeout: float = -1) -> None:
        """Not supported (docs/kafka-api.md): offsets committed in a transaction bypass the
        consumer's ack ledger."""
        self._refuse_closed()
        not_supported("send_offsets_to_transaction", NO_OFFSETS)
