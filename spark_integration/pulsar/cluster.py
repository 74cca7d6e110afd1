"""The driver's view of one Pulsar cluster: the topics' partitions, their last message ids, and
the query's progress.

Pulsar has no offsets to ask for: the last message id of a partition comes from a consumer's
``get_last_message_id``. The view keeps one consumer per partition on the query's own
subscription (``hotstandby-spark-<group>``, Failover) and acknowledges up to each committed
batch's end there, as Pulsar's Spark connectors keep a subscription per query: the broker
keeps what the query has not read yet. A batch read uses a subscription of its own and
removes it afterwards.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.client.settings import client_kwargs as cluster_kwargs
from hotstandby.adapters.pulsar.consumer.start_position import holds
from hotstandby.adapters.pulsar.topics import full_topic, logical_partition
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.ledger.staged import CopyMark
from hotstandby.spark_integration.source.options import SourceOptions

__all__ = ["PulsarCluster", "full_topic", "id_key", "id_text", "logical_partition", "message_id"]


def id_text(mid: pulsar.MessageId) -> str:
    """A message id as the offsets keep it: hex of its serialized form."""
    return bytes(mid.serialize()).hex()


def message_id(text: str) -> pulsar.MessageId:
    return pulsar.MessageId.deserialize(bytes.fromhex(text))


def id_key(text: str) -> tuple[int, int]:
    """``(ledger, entry)`` of a kept message id; ``(-1, -1)`` for "" (before the first message).
    All messages of a batch share their entry: ranges end after whole entries."""
    if not text:
        return (-1, -1)
    mid = message_id(text)
    return (mid.ledger_id(), mid.entry_id())


#: pulsar-client waits 30 s for an operation by default; the source asks the cluster on every
#: trigger and a task checks the route after a stall, so a cluster that died is noticed sooner.
_OPERATION_TIMEOUT_S = 5
_PEEK_MS = 2_000  # the driver's read of one message where it must know the next entry's id


def client_kwargs(spec: ClusterSpec, options: SourceOptions) -> dict[str, Any]:
    """pulsar.Client's arguments: the cluster's settings and credentials, ``pulsar.client.*``
    replacing the settings (:mod:`hotstandby.adapters.pulsar.client.settings`)."""
    return {"operation_timeout_seconds": _OPERATION_TIMEOUT_S, **cluster_kwargs(spec, options.pulsar_client)}


class PulsarCluster:
    """Partitions and last message ids on one cluster (see the module docs)."""

    def __init__(
        self,
        spec: ClusterSpec,
        options: SourceOptions,
        *,
        subscription: str | None = None,
        registered: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.spec = spec
        self._options = options
        self._registered = registered
        self._temporary = subscription is None
        self._subscription = subscription or f"hotstandby-spark-batch-{uuid.uuid4().hex[:8]}"
        self._client: pulsar.Client | None = None
        self._consumers: dict[str, pulsar.Consumer] = {}

    @property
    def client(self) -> pulsar.Client:
        if self._client is None:
            self._client = pulsar.Client(self.spec.url, **client_kwargs(self.spec, self._options))
        return self._client

    def topics(self) -> list[str]:
        """The topics read: ``topic``/``topics``, or the registered topics whose full names
        ``topicsPattern`` matches (pulsar-client cannot list a namespace's topics)."""
        pattern = self._options.pattern
        if pattern is None:
            return list(self._options.topics)
        return sorted({full_topic(t) for t in self._registered() if re.fullmatch(pattern, full_topic(t))})

    def partitions(self) -> list[str]:
        """The partitions' topic names of the subscribed topics, in a fixed order."""
        out: list[str] = []
        for name in self.topics():
            out.extend(self.client.get_topic_partitions(full_topic(name)))
        return sorted(out)

    def _consumer(self, topic: str) -> pulsar.Consumer:
        consumer = self._consumers.get(topic)
        if consumer is None:
            consumer = self.client.subscribe(topic, self._subscription, consumer_type=pulsar.ConsumerType.Failover,
                                             receiver_queue_size=1,
                                             initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
            self._consumers[topic] = consumer
        return consumer

    def last_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """The last message id per partition ("" when it holds none)."""
        out = {}
        for topic in topics:
            mid = self._consumer(topic).get_last_message_id()
            out[topic] = "" if mid.ledger_id() < 0 or mid.entry_id() < 0 else id_text(mid)
        return out

    def first_after(self, topic: str, start: str) -> tuple[int, int] | None:
        """``(ledger, entry)`` of the first message after ``start``'s entry ("": the partition's
        first), read within :data:`_PEEK_MS` per message; None if none came."""
        after = id_key(start)
        begin = message_id(start) if start else pulsar.MessageId.earliest
        reader = self.client.create_reader(topic, begin, start_message_id_inclusive=False)
        try:
            while True:  # the rest of start's entry (a batch) first
                mid = reader.read_next(_PEEK_MS).message_id()
                if (mid.ledger_id(), mid.entry_id()) > after:
                    return (mid.ledger_id(), mid.entry_id())
        except pulsar.Timeout:
            return None
        finally:
            with contextlib.suppress(pulsar.PulsarException):
                reader.close()

    def after_copy(self, topic: str, mark: CopyMark | None) -> str:
        """Where ``topic`` starts here after the newest copy read whose original is here
        (``mark``): before that original's entry (replication keeps order, so whatever was
        stored here before it was read already; the entry itself is read again and filtered),
        if this cluster still holds the original; else "" (the first message)."""
        if mark is None or mark.entry < 1 or not holds(self.client, topic, mark.ledger, mark.entry, mark.identity):
            return ""
        return id_text(pulsar.MessageId(-1, mark.ledger, mark.entry - 1, -1))

    def acknowledge(self, ids: Mapping[str, str]) -> None:
        """The query read up to ``ids``: the broker may let go of what came before."""
        for topic, text in ids.items():
            if text and topic in self._consumers:
                self._consumers[topic].acknowledge_cumulative(message_id(text))

    def close(self) -> None:
        for consumer in self._consumers.values():
            with contextlib.suppress(pulsar.PulsarException):  # a cluster we left may be gone
                if self._temporary:
                    consumer.unsubscribe()
                consumer.close()
        self._consumers.clear()
        if self._client is not None:
            with contextlib.suppress(pulsar.PulsarException):
                self._client.close()
            self._client = None
