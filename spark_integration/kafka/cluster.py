"""The driver's view of one Kafka cluster: which physical topics and partitions the source
reads there, their watermarks, the query's committed progress, and where to start after a
switch.

Only metadata passes through here; records are read by the executors (:mod:`.read`).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

from hotstandby.adapters.kafka.client_logs import with_logger
from hotstandby.adapters.kafka.consumer.start_positions import StartPositions, Visit
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.spark_integration.source.options import SourceOptions
from hotstandby.spark_integration.source.planning import Slot

__all__ = ["KafkaCluster", "client_config"]

_TIMEOUT_S = 5.0
_PLANNING_GROUP = "__hotstandby-spark-plan"  # batch reads commit nothing


def client_config(spec: ClusterSpec, options: SourceOptions) -> dict[str, Any]:
    """A raw consumer's settings for ``spec``: the cluster's overrides, then ``kafka.*``."""
    return {
        "auto.offset.reset": "earliest",
        **spec.client_config("consumer"),
        **options.client,
        "bootstrap.servers": spec.url,
        "enable.auto.commit": False,
    }


def copy_prefixes(spec: ClusterSpec, clusters: Iterable[str], links: Mapping[tuple[str, str], Link]) -> list[str]:
    """The prefixes MM2 gives remote copies on ``spec`` of the route's other clusters' topics."""
    out = []
    for other in clusters:
        link = links.get((other, spec.name))
        if other != spec.name and link is not None and link.policy == "prefix":
            out.append(f"{other}{link.separator}")
    return out


class KafkaCluster:
    """Metadata and progress of the source on one cluster (see the module docs)."""

    def __init__(self, spec: ClusterSpec, options: SourceOptions) -> None:
        self.spec = spec
        self._options = options
        self._consumer: RawConsumer | None = None
        self._admin: AdminClient | None = None

    @property
    def consumer(self) -> RawConsumer:
        if self._consumer is None:
            group = self._options.group or _PLANNING_GROUP
            self._consumer = RawConsumer(with_logger({**client_config(self.spec, self._options), "group.id": group}))
        # It is assigned nothing: a poll only hands librdkafka's log lines to the SDK's logger.
        self._consumer.poll(0)
        return self._consumer

    def topics(self, clusters: Sequence[str], links: Mapping[tuple[str, str], Link]) -> dict[str, str]:
        """physical -> logical topic, for every topic there that the subscription covers: the
        topic itself and its remote copies (``kafka-a.orders``). Raises KafkaException when
        the cluster does not answer."""
        prefixes = copy_prefixes(self.spec, clusters, links)
        meta = self.consumer.list_topics(timeout=_TIMEOUT_S)
        out: dict[str, str] = {}
        for name in meta.topics:
            logical = name
            for prefix in prefixes:
                if name.startswith(prefix):
                    logical = name[len(prefix) :]
                    break
            if not name.startswith("__") and self._options.wants(logical):
                out[name] = logical
        return out

    def slots(self, topics: Mapping[str, str]) -> list[Slot]:
        """The partitions of ``topics`` the source reads (``assign`` may pick some)."""
        meta = self.consumer.list_topics(timeout=_TIMEOUT_S)
        out: list[Slot] = []
        for topic, logical in sorted(topics.items()):
            found = meta.topics.get(topic)
            if found is None or found.error is not None:
                continue
            out.extend((topic, p) for p in sorted(found.partitions) if self._options.wants_partition(logical, p))
        return out

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each topic's id (Kafka's topic UUID, as text): a topic deleted and created again, or
        a cluster rebuilt, has a new one, and offsets taken on the old one name other records.
        Topics the cluster does not have are left out; raises KafkaException when it does not
        answer."""
        wanted = sorted(set(topics))
        if not wanted:
            return {}
        if self._admin is None:
            config = {**self.spec.client_config("admin"), **self._options.client, "bootstrap.servers": self.spec.url}
            self._admin = AdminClient(with_logger(config))
        futures = self._admin.describe_topics(TopicCollection(wanted), request_timeout=_TIMEOUT_S)
        out: dict[str, str] = {}
        for topic, future in futures.items():
            try:
                out[topic] = str(future.result(timeout=_TIMEOUT_S * 2).topic_id)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
            except TimeoutError:
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, f"describing {topic} on {self.spec.name}")
                ) from None
        return out

    def watermarks(self, slots: Iterable[Slot]) -> dict[Slot, tuple[int, int]]:
        """``(low, high)`` per partition; raises KafkaException when the cluster does not answer."""
        return {
            (t, p): self.consumer.get_watermark_offsets(TopicPartition(t, p), timeout=_TIMEOUT_S, cached=False)
            for t, p in slots
        }

    def offsets_for_time(self, slots: Iterable[Slot], timestamp_ms: int) -> dict[Slot, int]:
        """The first offset at or after ``timestamp_ms`` per partition (the end when none is)."""
        found = self.consumer.offsets_for_times(
            [TopicPartition(t, p, timestamp_ms) for t, p in slots], timeout=_TIMEOUT_S
        )
        marks = self.watermarks((tp.topic, tp.partition) for tp in found if tp.offset < 0)
        return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else marks[(tp.topic, tp.partition)][1]
                for tp in found}  # fmt: skip

    def commit(self, positions: Mapping[str, Mapping[int, int]]) -> None:
        """Commit the query's progress as its group's offsets, so MirrorMaker 2 checkpoints
        translate it to the other cluster. Asynchronous: a cluster that does not answer must not
        hold the query up (the progress is in Spark's checkpoint; this only helps translation)."""
        offsets = [TopicPartition(t, p, o) for t, parts in positions.items() for p, o in parts.items()]
        if offsets:
            self.consumer.commit(offsets=offsets, asynchronous=True)

    def start_positions(
        self,
        previous: Visit,
        topics: Mapping[str, str],
        slots: Sequence[Slot],
        links: Mapping[tuple[str, str], Link],
    ) -> tuple[dict[Slot, int], Counter[str]]:
        """Where each partition starts after a switch from ``previous`` (the core's
        translation: committed offsets, MM2 checkpoints, reverse offset syncs, a timestamp
        seek, the beginning) and how many partitions each strategy chose."""
        chooser = StartPositions(
            group=self._options.group or _PLANNING_GROUP,
            spec=self.spec,
            previous=previous,
            links=dict(links),
            skew_ms=self._options.timestamp_skew_ms,
            consumer=self.consumer,
        )
        starts: dict[Slot, int] = {}
        strategies: Counter[str] = Counter()
        marks = self.watermarks(slots)
        for topic, partition in slots:
            proposal = chooser.choose(topic, partition, topics[topic])
            low = marks[(topic, partition)][0]
            if proposal is None:
                starts[(topic, partition)], strategy = low, "beginning"
            else:
                starts[(topic, partition)], strategy = max(proposal.position, low), proposal.strategy
            strategies[strategy] += 1
        return starts, strategies

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):  # a cluster we left may be gone
                self._consumer.close()
            self._consumer = None
        self._admin = None
