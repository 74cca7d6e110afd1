"""One Pulsar replication flow, at-least-once and restart-safe.

Each topic (each partition of a partitioned topic) is read with a reader that starts after the
flow's stored progress. A round reads a batch, sends every message to the same topic on the
target, waits for the target's receipts, and only then stores the position of the last
message copied (in the config center, ``<ns>/replication/<flow>/<topic>``). Killed and
restarted, the flow resumes after that position: a message may be copied twice, never skipped.

Readers keep no state on the broker, so a killed replicator leaves nothing behind that could
hold messages back from its successor (with pulsar-lite, re-creating a multi-topic
subscription that a SIGKILLed consumer held timed out).

Each copy carries, besides the source's properties:

* ``__MSG_PROP_REPL_SOURCE_POSITION`` = ``"<ledgerId>:<entryId>"`` of the source message, as
  Pulsar >= 3.0.11 geo-replication adds;
* ``hs.repl.batch_index`` when the source message was the n-th of a batch (ours);
* ``hs.repl.partition``, the source partition, which routes the copy to the same partition;
* ``hs.replicated.from`` = the source cluster: copies are never replicated again (Pulsar marks
  replicated messages with ``replicated_from``, which clients cannot set).

Messages are copied in batches; one of more than :data:`CHUNK_ABOVE` bytes (a chunked message,
which a reader returns whole) is copied by a producer that chunks what is too big for the
target broker, as Pulsar's geo-replication copies a chunked message chunk by chunk. The two
producers of a topic take turns in the source's order: each is flushed before the other sends.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pulsar

from hotstandby.adapters.pulsar.adapter import REPL_SOURCE_POSITION, REPLICATED_FROM
from hotstandby.configcenter import ConfigCenter, KVStore
from hotstandby.configcenter.doc_parsing import load_object
from hotstandby.configcenter.etcd import EtcdStore
from hotstandby.errors import HotStandbyError, ValidationError
from hotstandby.logs import get_logger
from hotstandby.refcluster.flow_status import FlowStatus
from hotstandby.refcluster.replicators.pulsar.config import PulsarFlowConfig
from hotstandby.refcluster.replicators.pulsar.readers import SourceReaders
from hotstandby.settings import Settings

__all__ = ["BATCH_INDEX", "CHUNK_ABOVE", "MARKER", "PARTITION", "REPL_SOURCE_POSITION", "PulsarFlow", "base_topic"]

log = get_logger("hotstandby.replicator")


def parse_progress(key: str, raw: bytes) -> bytes:
    """The serialized message id stored under ``key`` (``{"message_id": base64, ...}``), or
    :class:`ValidationError` for anything else, an id pulsar-client cannot read included."""
    doc = load_object(key, raw)
    encoded = doc.get("message_id")
    if not isinstance(encoded, str) or not encoded:
        raise ValidationError(key, "'message_id' must be a non-empty base64 string")
    try:
        serialized = base64.b64decode(encoded, validate=True)
        pulsar.MessageId.deserialize(serialized)
    except (ValueError, binascii.Error):
        raise ValidationError(key, "'message_id' is not a serialized message id in base64") from None
    return serialized


BATCH_INDEX = "hs.repl.batch_index"
PARTITION = "hs.repl.partition"
MARKER = REPLICATED_FROM
_PARTITION_SUFFIX = re.compile(r"^(?P<base>.+)-partition-(?P<index>\d+)$")
_BATCH = 500
_TIMEOUT_S = 30
_STATUS_EVERY = 1.0
_MAX_BACKOFF = 5.0
#: Messages larger than this (bytes) are copied by a chunking producer; a broker takes 5 MiB
#: in one message by default, less the batch's and the properties' overhead.
CHUNK_ABOVE = 1024 * 1024


class ReplicationError(RuntimeError):
    """A round failed; its messages are redelivered by the source and copied again."""


def base_topic(topic: str) -> str:
    """``persistent://t/n/x-partition-3`` -> ``persistent://t/n/x``."""
    match = _PARTITION_SUFFIX.match(topic)
    return match.group("base") if match else topic


def _route_by_property(msg: pulsar.Message, num_partitions: int) -> int:
    return int(msg.properties().get(PARTITION, "0")) % num_partitions


class PulsarFlow:
    def __init__(self, config: PulsarFlowConfig) -> None:
        self.config = config
        quiet = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
        self._source = pulsar.Client(config.source_url, operation_timeout_seconds=_TIMEOUT_S, logger=quiet)
        self._target = pulsar.Client(config.target_url, operation_timeout_seconds=_TIMEOUT_S, logger=quiet)
        # The store holds this flow's progress records; the config center on it, the topic registry.
        self._store: KVStore | None = None
        self._center: ConfigCenter | None = None
        if config.etcd:
            # TLS and credentials from HOTSTANDBY_ETCD_* (docs/security.md): never in the config file.
            settings = Settings.resolve(etcd=config.etcd, namespace=config.config_namespace)
            self._store = EtcdStore(settings.etcd, timeout=settings.etcd_timeout, security=settings.etcd_security)
            self._center = ConfigCenter(self._store, settings.namespace)
        self._readers = SourceReaders(
            config.name, self._open_reader, on_failure=lambda part, exc: self.status.error(f"{part}: {exc}")
        )
        self._producers: dict[tuple[str, bool], pulsar.Producer] = {}  # (topic, chunking) -> producer
        self._progress: dict[str, bytes] = {}  # partition topic -> serialized last copied message id
        self.topics: list[str] = []
        self.status = FlowStatus(flow=config.name, system="pulsar", policy="identity")
        self._backoff = 0.0

    # -- progress -------------------------------------------------------------------------

    def _progress_key(self, topic: str) -> str:
        assert self._center is not None
        return f"{self._center.keys.namespace}/replication/{quote(self.config.name, safe='')}/{quote(topic, safe='')}"

    def _load_progress(self, topic: str) -> pulsar.MessageId:
        if self._store is not None:
            key = self._progress_key(topic)
            kv = self._store.get(key)
            if kv is not None:
                try:
                    self._progress[topic] = parse_progress(key, kv.value)
                except ValidationError as exc:
                    # Copying again from the earliest message duplicates copies (filtered by
                    # identity downstream); trusting a damaged position could skip messages.
                    log.warning("replicator.progress_rejected", flow=self.config.name, topic=topic, reason=str(exc))
        return self._resume_from(topic)

    def _resume_from(self, topic: str) -> pulsar.MessageId:
        saved = self._progress.get(topic)
        return pulsar.MessageId.deserialize(saved) if saved else pulsar.MessageId.earliest

    def _open_reader(self, part: str) -> pulsar.Reader:
        """A reader of ``part`` after what the flow copied (after the stored progress the first time)."""
        start = self._resume_from(part) if part in self._progress else self._load_progress(part)
        return self._source.create_reader(part, start)

    def _store_progress(self, done: dict[str, pulsar.MessageId]) -> None:
        for topic, mid in done.items():
            serialized = mid.serialize()
            if self._store is not None:
                doc = {"message_id": base64.b64encode(serialized).decode(), "position": str(mid)}
                self._store.put(self._progress_key(topic), json.dumps(doc).encode())
            self._progress[topic] = serialized

    # -- topics ---------------------------------------------------------------------------

    def _wanted_topics(self) -> list[str]:
        found = set(self.config.topics)
        if self._center is not None:
            found.update(self._center.registered_topics(self.config.source_alias))
        return sorted(t for t in found if self.config.in_scope(t))

    def _refresh_topics(self) -> None:
        for topic in self._wanted_topics():
            if topic in self.topics:
                continue
            for part in self._source.get_topic_partitions(topic):
                self._readers.add(part)
            self.topics.append(topic)
            log.info(
                "replicator.reading", flow=self.config.name, topic=topic, resume_after=str(self._progress.get(topic))
            )
        self.status.topics_refreshed_at = time.time()

    def _producer(self, topic: str, *, chunking: bool) -> pulsar.Producer:
        """The topic's batching producer, or its chunking one (pulsar-client does not do both)."""
        producer = self._producers.get((topic, chunking))
        if producer is None:
            partitioned = self._source.get_topic_partitions(topic) != [topic]
            mode = {"chunking_enabled": True} if chunking else {"batching_max_publish_delay_ms": 1}
            producer = self._target.create_producer(
                topic,
                batching_enabled=not chunking,
                block_if_queue_full=True,
                send_timeout_millis=_TIMEOUT_S * 1000,
                message_router=_route_by_property if partitioned else None,
                **mode,
            )
            self._producers[(topic, chunking)] = producer
        return producer

    # -- copying --------------------------------------------------------------------------

    def _copy(self, batch: list[tuple[str, pulsar.Message]]) -> None:
        results: list[Any] = []
        used: set[tuple[str, bool]] = set()

        def done(topic: str) -> Callable[[Any, Any], None]:
            def callback(result: Any, _msg_id: Any) -> None:
                results.append((topic, result))

            return callback

        copied, skipped = 0, 0
        last: dict[str, pulsar.MessageId] = {}
        chunking_now: dict[str, bool] = {}  # per topic, which of its producers sent last
        for part, msg in batch:
            last[part] = msg.message_id()
            props = dict(msg.properties())
            if MARKER in props:
                skipped += 1  # already a copy: never replicated again
                continue
            mid = msg.message_id()
            topic = base_topic(msg.topic_name())
            props[REPL_SOURCE_POSITION] = f"{mid.ledger_id()}:{mid.entry_id()}"
            props[MARKER] = self.config.source_alias
            if mid.batch_index() >= 0:
                props[BATCH_INDEX] = str(mid.batch_index())
            if mid.partition() >= 0:
                props[PARTITION] = str(mid.partition())
            data = msg.data()
            chunking = len(data) > CHUNK_ABOVE
            if chunking_now.setdefault(topic, chunking) != chunking:
                self._producers[(topic, not chunking)].flush()  # what it sent comes first
                chunking_now[topic] = chunking
            self._producer(topic, chunking=chunking).send_async(
                data,
                done(topic),
                properties=props,
                partition_key=msg.partition_key() or None,
                ordering_key=msg.ordering_key() or None,
                event_timestamp=msg.event_timestamp() or None,
            )
            used.add((topic, chunking))
            copied += 1
            entry = self.status.topics.setdefault(topic, {"copied": 0})
            entry["copied"] += 1
        for key in used:
            self._producers[key].flush()
        failed = [(t, r) for t, r in results if r != pulsar.Result.Ok]
        if failed or len(results) != copied:
            raise ReplicationError(
                f"target did not confirm {len(failed) or copied - len(results)} messages: {failed[:3]}"
            )
        self._store_progress(last)
        self.status.records_copied += copied
        self.status.records_skipped += skipped
        newest = max((m.publish_timestamp() for _, m in batch), default=0)
        # Pulsar gives no backlog count without an admin API: report how old the newest copied
        # message was when the round was full (more is waiting), else 0.
        self.status.lag_seconds = round(time.time() - newest / 1000, 3) if len(batch) >= _BATCH and newest else 0.0

    # -- the loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        last_refresh = last_status = 0.0
        while not stop.is_set():
            try:
                now = time.monotonic()
                if now - last_refresh >= self.config.refresh_topics:
                    self._refresh_topics()
                    last_refresh = now
                    self.status.state = "running"
                batch = self._readers.read_round(_BATCH, _TIMEOUT_S * 1000)
                if batch:
                    self._copy(batch)
                else:
                    stop.wait(0.05)
                if time.monotonic() - last_status >= _STATUS_EVERY:
                    self.status.write(self.config.status_path)
                    last_status = time.monotonic()
                self._backoff = 0.0
            except (ReplicationError, pulsar.PulsarException, HotStandbyError) as exc:
                self._failed(exc, stop)
            except Exception as exc:  # a replicator must not die: report, then retry like any failure
                log.exception("replicator.unexpected_error", flow=self.config.name, error=repr(exc))
                self._failed(exc, stop)
        self.close()

    def _failed(self, exc: Exception, stop: threading.Event) -> None:
        self._backoff = min(max(self._backoff * 2, 0.2), _MAX_BACKOFF)
        log.warning("replicator.failed", flow=self.config.name, error=str(exc), retry_in_s=self._backoff)
        self.status.error(str(exc))
        self.status.write(self.config.status_path)
        stop.wait(self._backoff)
        self._readers.rewind()

    def close(self) -> None:
        self.status.state = "stopped"
        self.status.write(self.config.status_path)
        self._readers.close()
        for closeable in (*self._producers.values(), self._source, self._target):
            try:
                closeable.close()
            except pulsar.PulsarException as exc:
                log.warning("replicator.close_failed", flow=self.config.name, error=str(exc))
        if self._center is not None:
            self._center.close()
