"""The anchors' workloads (``bench/versus.py``, ``tests/integration/test_versus.py``): the same
consumer code on the raw clients and on the SDK.

Every row produces with the SDK producer (the same records, moved by the same flips); the rows
differ in the consumers:

* **Kafka**: consumers of one group, each committing by hand after a batch of 1-20 records
  (the batch's newest record of each partition, ``commit(message=...)``; :class:`Variant`
  changes the batch and commits every record instead). The raw consumer is what a MirrorMaker 2 user runs: told of a flip, it commits,
  closes, and starts on the other cluster with the same group, subscribed to the local topic and
  to MM2's copy of the other cluster's (``<source>.<topic>``), from the offsets MM2 synced to that
  group (``sync.group.offsets.enabled``), ``auto.offset.reset=earliest`` where there are none.
* **Pulsar**: two consumers of one Shared subscription with replicated subscription state,
  acknowledging individually and out of order after random delays. No negative
  acknowledgements: with batching producers, a raw consumer's negative acknowledgement brings its
  whole batch again, acknowledged messages included, which is not what this bench is about. The raw
  consumer, told of a flip, closes and subscribes on the other cluster under the same name.
  :class:`Variant` adds negative acknowledgements (SDK rows only).

"Told of a flip" is the bench's stand-in for restarting the application with the standby's
address; a consumer on a cluster that does not answer is abandoned after a few seconds.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import confluent_kafka
import pulsar
from confluent_kafka import KafkaException

from hotstandby.adapters.kafka import Consumer as SdkKafkaConsumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.drill.kafka import KafkaWorkload
from hotstandby.drill.pulsar import MAX_ACK_DELAY_S, PulsarWorkload, acknowledge_due
from hotstandby.drill.runner import DrillContext
from hotstandby.refcluster import RefCluster

__all__ = ["KafkaVersus", "PulsarVersus", "Variant"]

_ABANDON_S = 5.0  # how long a raw client leaving a cluster may take before it is left behind
_RAW_LOG = logging.getLogger("bench.versus.raw")


@dataclass(frozen=True, kw_only=True)
class Variant:
    """How the consumers acknowledge; the default is the anchors' pattern."""

    batch: tuple[int, int] = (1, 20)  # Kafka: records per commit, drawn in this range
    per_record: bool = False  # Kafka: commit every record of the batch, not each partition's newest
    nack_share: float = 0.0  # Pulsar: of the messages received, negatively acknowledged (SDK only)
    seed: int = 0  # of the consumers' random choices


def _in_background(action: Callable[[], None], timeout: float) -> None:
    """Run ``action`` in a daemon thread, waiting for it at most ``timeout`` s."""
    thread = threading.Thread(target=action, name="versus-leave", daemon=True)
    thread.start()
    thread.join(timeout)


class _Route:
    """Which cluster the raw clients should be on: the route's active one at the start, the
    other one after each flip (the drill flips between the two); how to reach each."""

    def __init__(self, rc: RefCluster, ctx: DrillContext, route: str) -> None:
        with ConfigCenter.open(ctx.settings()) as center:
            found = center.route(route)
        self.clusters = (found.clusters[0], found.clusters[1])
        self.active = found.active
        self.spec = rc.cluster_spec

    def flip(self) -> None:
        self.active = next(c for c in self.clusters if c != self.active)

    def other(self, cluster: str) -> str:
        return next(c for c in self.clusters if c != cluster)


class _Told:
    """A drill workload whose raw clients are told of each flip (mixed in before it)."""

    raw_phase = ""
    route: str

    def __init__(self, run: str, *, raw: bool, variant: Variant | None = None) -> None:
        super().__init__(run)  # type: ignore[call-arg]  # the workload's
        self.raw = raw
        self.variant = variant or Variant()
        self.phase = self.raw_phase if raw else "sdk"
        self._route: _Route

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        super().prepare(rc, ctx)  # type: ignore[misc]  # the workload's
        self._route = _Route(rc, ctx, self.route)

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        self._route.flip()


class KafkaVersus(_Told, KafkaWorkload):
    raw_phase = "raw, MM2 offsets"

    def _open(self, ctx: DrillContext, index: int, cluster: str) -> Any:
        name = f"versus-consumer-{index}"
        common = {"group.id": f"drill-{self.run}", "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if not self.raw:
            return SdkKafkaConsumer({**self._config(ctx, name), **common, **ctx.options.kafka_consumer})
        spec = self._route.spec(cluster)
        return confluent_kafka.Consumer({**spec.client, **spec.consumer, "bootstrap.servers": spec.url,
                                         "client.id": name, "logger": _RAW_LOG, **common})  # fmt: skip

    def _topics(self, cluster: str) -> list[str]:
        """The raw consumer reads the local topic and MM2's copy of the other cluster's."""
        return [self.topic, f"{self._route.other(cluster)}.{self.topic}"] if self.raw else [self.topic]

    def consume(self, ctx: DrillContext, index: int) -> None:
        if not self.raw:
            self._session(ctx, index, self._route.active, threading.Event())
            return
        # One session per cluster, each in its thread: a session whose cluster died may hang in
        # a commit for a session timeout; the application would have been restarted meanwhile.
        errors: list[BaseException] = []
        while not ctx.stop.is_set():
            cluster = self._route.active
            left = threading.Event()

            def session(cluster: str = cluster, left: threading.Event = left) -> None:
                try:
                    self._session(ctx, index, cluster, left)
                except BaseException as exc:
                    errors.append(exc)
                    ctx.stop.set()

            threading.Thread(target=session, name=f"versus-{cluster}-{index}", daemon=True).start()
            while self._route.active == cluster and not ctx.stop.wait(0.05):
                pass
            left.set()  # it closes by itself, in its thread
        if errors:
            raise errors[0]

    def _session(self, ctx: DrillContext, index: int, cluster: str, left: threading.Event) -> None:
        """Consume from ``cluster`` (the SDK: from the route's active cluster, wherever it
        goes) until the drill stops or ``left`` is set, committing after each batch."""
        variant = self.variant
        rnd = random.Random(variant.seed * 1000 + index)
        consumer = self._open(ctx, index, cluster)
        pending: list[Any] = []  # processed, not committed yet

        def commit(*_: Any) -> None:
            if pending:
                _commit(consumer, pending, ctx, per_record=variant.per_record)

        batch = rnd.randint(*variant.batch)
        try:
            consumer.subscribe(self._topics(cluster), on_revoke=commit)
            while not ctx.stop.is_set() and not left.is_set():
                before = cluster if self.raw else consumer.cluster
                msg = consumer.poll(0.2)
                if msg is None:
                    commit()  # idle: nothing more to batch with
                    continue
                if msg.error() is not None or left.is_set():
                    continue
                after = cluster if self.raw else consumer.cluster
                ctx.tally.received(int(msg.value()), before if after == before else None)
                pending.append(msg)
                if len(pending) >= batch:
                    commit()
                    batch = rnd.randint(*variant.batch)
            commit()
        finally:
            consumer.close()


def _commit(consumer: Any, pending: list[Any], ctx: DrillContext, *, per_record: bool = False) -> None:
    """Commit each partition's last processed record (``commit(message=...)``, synchronous), or
    every record; a partition's records are acknowledged when its commit worked, and processed
    with their commit refused when it raised (drill/tally.py). Not ``commit()``: it covers the
    partitions assigned now, which after a rebalance (or, for the SDK, a switch) are not those
    the records came from, and they come again."""
    if per_record:
        done, refused = [], []
        for msg in pending:
            try:
                consumer.commit(message=msg, asynchronous=False)
            except KafkaException:
                refused.append(int(msg.value()))  # processed all the same; it may come again
                continue
            done.append(int(msg.value()))
        pending.clear()
        ctx.tally.acknowledged(done)
        ctx.tally.refused(refused)
        return
    # The last handed out (offsets of two clusters do not compare; the SDK's commit covers
    # what it handed out of the partition before the record it is given, from the topic and
    # its remote copies alike).
    newest = {(msg.topic(), msg.partition()): msg for msg in pending}
    done, refused = [], []
    for key, msg in newest.items():
        records = [int(m.value()) for m in pending if (m.topic(), m.partition()) == key]
        try:
            consumer.commit(message=msg, asynchronous=False)
        except KafkaException:
            refused += records  # processed all the same; they may come again
            continue
        done += records
    pending.clear()
    ctx.tally.acknowledged(done)
    ctx.tally.refused(refused)


class PulsarVersus(_Told, PulsarWorkload):
    raw_phase = "raw, replicated subscription"

    def _raw_client(self, cluster: str) -> pulsar.Client:
        quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
        return pulsar.Client(self._route.spec(cluster).url, operation_timeout_seconds=10, logger=quiet)

    def _subscribe(self, client: Any, ctx: DrillContext) -> Any:
        """Subscribe; the raw client tries again while the broker times out (a standby's
        broker asks the dead primary about a replicated topic it creates, for seconds)."""
        while True:
            try:
                return self._subscribe_once(client)
            except pulsar.Timeout:
                if not self.raw or ctx.stop.is_set() or time.monotonic() > ctx.deadline:
                    raise

    def _subscribe_once(self, client: Any) -> Any:
        return client.subscribe(self.topic, self.subscription, consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest,
                                negative_ack_redelivery_delay_ms=200, replicate_subscription_state_enabled=True)  # fmt: skip

    def consume(self, ctx: DrillContext, index: int) -> None:
        rnd = random.Random(self.variant.seed * 1000 + index)
        nack_share = 0.0 if self.raw else self.variant.nack_share
        cluster = self._route.active
        client: Any = self._raw_client(cluster) if self.raw else self._shared_client(ctx)
        consumer = self._subscribe(client, ctx)
        held: list[tuple[float, Any]] = []  # (acknowledge at, message)
        try:
            while not ctx.stop.is_set():
                if self.raw and self._route.active != cluster:
                    held.clear()  # not acknowledged: they come again
                    _in_background(functools.partial(_close_pulsar, consumer, client), _ABANDON_S)
                    cluster = self._route.active
                    client = self._raw_client(cluster)
                    consumer = self._subscribe(client, ctx)
                before = cluster if self.raw else client.cluster
                try:
                    msg = consumer.receive(timeout_millis=100)
                except pulsar.Timeout:
                    msg = None
                if msg is not None:
                    after = cluster if self.raw else client.cluster
                    ctx.tally.received(int(msg.data()), before if after == before else None)
                    if nack_share and rnd.random() < nack_share:
                        consumer.negative_acknowledge(msg)  # it comes again
                    else:
                        held.append((time.monotonic() + rnd.uniform(0, MAX_ACK_DELAY_S), msg))
                held = acknowledge_due(consumer, held, rnd, ctx)
        finally:
            if self.raw:
                _in_background(functools.partial(_close_pulsar, consumer, client), _ABANDON_S)
            else:
                consumer.close()
                self._release_shared()


def _close_pulsar(consumer: Any, client: pulsar.Client) -> None:
    with contextlib.suppress(pulsar.PulsarException):
        consumer.close()
    with contextlib.suppress(pulsar.PulsarException):
        client.close()
