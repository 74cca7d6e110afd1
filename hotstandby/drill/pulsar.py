"""The Pulsar drill, in two parts, each on a fresh topic of the reference cluster with an SDK
producer and the same switches: first M consumers of one Shared subscription, acknowledging
individually and out of order after random delays, with some negative acknowledgements; then
one consumer of an Exclusive subscription acknowledging cumulatively, every few messages.

The consumers share one :class:`~hotstandby.adapters.pulsar.Client` (the producer has its
own): pulsar-lite refuses a second connection's consumer on a subscription (consumer ids
collide, docs/refcluster.md), so consumers in separate processes cannot be drilled there."""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pulsar

from hotstandby.adapters.pulsar import Client
from hotstandby.adapters.pulsar.client.settings import client_kwargs
from hotstandby.adapters.pulsar.consumer.consumer import Consumer
from hotstandby.configcenter import ConfigCenter, polling
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import DrillContext, DrillOptions, DrillProgress, new_run_id, run_drill
from hotstandby.logs import get_logger
from hotstandby.refcluster import RefCluster

__all__ = ["WORKLOAD", "PulsarWorkload", "acknowledge_due", "run"]

log = get_logger("hotstandby.drill")

ROUTE = "payments"
NACK_SHARE = 0.02  # of the messages received, negatively acknowledged (they come again)
MAX_ACK_DELAY_S = 0.2  # a message is acknowledged after a random delay up to this
TOPIC_LOAD_S = 60.0  # a restarted broker serves the drill's topic again within this


def _serves(client: pulsar.Client, topic: str) -> bool:
    """Whether the broker answers for ``topic``: a reader's question loads it."""
    try:
        reader = client.create_reader(topic, pulsar.MessageId.latest)
        try:
            reader.has_message_available()
        finally:
            reader.close()
    except pulsar.PulsarException:
        return False
    return True


class PulsarWorkload:
    system = "pulsar"
    route = ROUTE

    def __init__(self, run: str, *, exclusive: bool = False) -> None:
        self.run = run
        self.exclusive = exclusive
        self.phase = "exclusive, cumulative acks" if exclusive else "shared, individual acks out of order"
        self.topic = f"persistent://public/default/drill-{run}"
        self.subscription = f"drill-{run}"
        self._consumers_client: Client | None = None
        self._lock = threading.Lock()
        self._open_consumers = 0

    def _shared_client(self, ctx: DrillContext) -> Client:
        with self._lock:
            if self._consumers_client is None:
                self._consumers_client = self._client(ctx, "drill-consumers")
            self._open_consumers += 1
            return self._consumers_client

    def _release_shared(self) -> None:
        with self._lock:
            self._open_consumers -= 1
            if self._open_consumers == 0 and self._consumers_client is not None:
                self._consumers_client.close()
                self._consumers_client = None

    def _client(self, ctx: DrillContext, name: str) -> Client:
        # Not pulsar-client's console logger: stdout holds the report (--json). Not a Python
        # logger either: it is called back for every message the C++ client logs.
        quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
        return Client(ROUTE, namespace=ctx.namespace, client_id=name, options=ctx.etcd_config,
                      operation_timeout_seconds=10, logger=quiet)  # fmt: skip

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        # The reference replicators copy the topics registered in the reference cluster's namespace.
        with ConfigCenter.open(replace(rc.settings())) as center:
            for cluster in ("pulsar-a", "pulsar-b"):
                center.register_topic(cluster, self.topic)

    def restarted(self, rc: RefCluster, broker: str) -> None:
        """Both Pulsar flavours keep their data across a restart: nothing to provision. As an
        SRE checks a cluster before failing back to it, wait until ``broker`` serves the topic
        again: Apache Pulsar loads a topic on its first use after a crash (seconds, recovering
        its ledgers), which a flip back would otherwise count as the clients' switch time."""
        spec = rc.cluster_spec(broker)
        quiet = pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr")
        client = pulsar.Client(spec.url, **client_kwargs(spec, {"operation_timeout_seconds": 10, "logger": quiet}))
        try:
            if not polling.wait_until(
                functools.partial(_serves, client, self.topic), TOPIC_LOAD_S, first=0.2, most=1.0
            ):
                log.warning("drill.topic_not_served", broker=broker, topic=self.topic, waited_s=TOPIC_LOAD_S)
        finally:
            client.close()

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        """Nothing to do: the clients follow the flip by themselves."""

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        """Nothing to do: the clients follow the flip by themselves."""

    def produce(self, ctx: DrillContext) -> None:
        client = self._client(ctx, "drill-producer")
        try:
            producer = client.create_producer(self.topic, block_if_queue_full=True, batching_enabled=True,
                                              batching_max_publish_delay_ms=5, send_timeout_millis=120_000)  # fmt: skip
            began = time.monotonic()
            for seq in range(ctx.options.messages):
                ctx.pace(began, seq)
                if ctx.stop.is_set():
                    return

                def report(result: Any, _mid: Any, seq: int = seq) -> None:
                    ctx.tally.delivered(seq, result == pulsar.Result.Ok)
                    if result != pulsar.Result.Ok:
                        log.warning("drill.delivery_failed", seq=seq, error=str(result))

                producer.send_async(str(seq).encode(), report, partition_key=str(seq % 97))
            producer.flush()
            ctx.resent = producer.resent
            ctx.replicated = producer.trimmed
        finally:
            client.close()

    def consume(self, ctx: DrillContext, index: int) -> None:
        if self.exclusive:
            self._consume_cumulatively(ctx)
            return
        rnd = random.Random(index)
        client = self._shared_client(ctx)
        consumer = None
        try:
            consumer = client.subscribe(self.topic, self.subscription, consumer_type=pulsar.ConsumerType.Shared,
                                        initial_position=pulsar.InitialPosition.Earliest,
                                        negative_ack_redelivery_delay_ms=200)  # fmt: skip
            held: list[tuple[float, Any]] = []  # (acknowledge at, message)
            while not ctx.stop.is_set():
                msg = _receive(ctx, client, consumer)
                if msg is not None:
                    if rnd.random() < NACK_SHARE:
                        consumer.negative_acknowledge(msg)
                    else:
                        held.append((time.monotonic() + rnd.uniform(0, MAX_ACK_DELAY_S), msg))
                held = acknowledge_due(consumer, held, rnd, ctx)
        finally:
            if consumer is not None:
                ctx.filtered["shared"] = consumer.filtered  # one count for the consumers sharing a client
                consumer.close()
            self._release_shared()

    def _consume_cumulatively(self, ctx: DrillContext) -> None:
        """The one consumer of an Exclusive subscription: a cumulative acknowledgement per
        partition every 1 to 20 messages (and when idle)."""
        rnd = random.Random(7)
        client = self._shared_client(ctx)
        consumer = None
        try:
            consumer = client.subscribe(self.topic, self.subscription, consumer_type=pulsar.ConsumerType.Exclusive,
                                        initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
            pending: list[Any] = []
            batch = rnd.randint(1, 20)
            while not ctx.stop.is_set():
                msg = _receive(ctx, client, consumer)
                if msg is not None:
                    pending.append(msg)
                if pending and (msg is None or len(pending) >= batch):
                    last = {m.topic_name(): m for m in pending}  # the newest of each partition
                    for m in last.values():
                        consumer.acknowledge_cumulative(m)
                    ctx.tally.acknowledged([int(m.data()) for m in pending])
                    pending.clear()
                    batch = rnd.randint(1, 20)
        finally:
            if consumer is not None:
                ctx.filtered["exclusive"] = consumer.filtered
                consumer.close()
            self._release_shared()


def acknowledge_due(consumer: Any, held: list[tuple[float, Any]], rnd: random.Random,
                    ctx: DrillContext) -> list[tuple[float, Any]]:  # fmt: skip
    """Acknowledge the messages of ``held`` ((acknowledge at, message) pairs) that are due, in
    a shuffled order; the rest."""
    now = time.monotonic()
    due = [m for at, m in held if at <= now]
    if not due:
        return held
    rnd.shuffle(due)  # out of order
    for m in due:
        consumer.acknowledge(m)
    ctx.tally.acknowledged([int(m.data()) for m in due])
    return [(at, m) for at, m in held if at > now]


def _receive(ctx: DrillContext, client: Client, consumer: Consumer) -> pulsar.Message | None:
    """The next message within 100 ms (None), counted as received."""
    before = client.cluster
    try:
        msg = consumer.receive(timeout_millis=100)
    except pulsar.Timeout:
        return None
    # Moved while receiving: the message may come from either cluster.
    ctx.tally.received(int(msg.data()), before if client.cluster == before else None)
    return msg


WORKLOAD = PulsarWorkload  # the workload an integration's drill produces with (drill/systems.py)


def run(rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None) -> DrillReport:
    """The Pulsar drill on the (running) reference cluster ``rc``: both parts (see the module doc)."""
    shared = run_drill(rc, options, PulsarWorkload(new_run_id()), progress)
    exclusive = run_drill(rc, replace(options, consumers=1), PulsarWorkload(new_run_id(), exclusive=True), progress)
    return DrillReport.combine([shared, exclusive])
