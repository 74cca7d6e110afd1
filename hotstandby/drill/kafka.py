"""The Kafka drill's workload: an SDK producer and M consumers of one group on a fresh topic of
the reference cluster; the last consumer commits by hand, record by record in a shuffled order,
the others use auto commit."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import DrillContext, DrillFailed, DrillOptions, DrillProgress, new_run_id, run_drill
from hotstandby.logs import get_logger
from hotstandby.refcluster import RefCluster

__all__ = ["WORKLOAD", "KafkaWorkload", "run"]

log = get_logger("hotstandby.drill")

ROUTE = "orders"
_IDLE_REPORT_S = 10.0
_COPY_WAIT_S = 60.0
PARTITIONS = 4  # what Tansu creates by itself when a restarted, empty broker is asked for the topic


def _create_topic(spec: ClusterSpec, topic: str) -> None:
    admin = shared_admin(spec)  # never freed: see adapters/kafka/admin_clients.py
    try:
        new = NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)
        admin.create_topics([new], request_timeout=10)[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def _wait_topic(spec: ClusterSpec, topic: str) -> None:
    """Wait until ``topic`` exists on ``spec``'s cluster (the replicator creates copies)."""
    admin = shared_admin(spec)

    def there() -> bool:
        try:
            found = admin.list_topics(topic, timeout=5).topics.get(topic)
        except KafkaException:
            return False
        return found is not None and found.error is None

    if not wait_until(there, _COPY_WAIT_S, first=0.2, most=0.5):
        raise DrillFailed(f"the replicator did not create {topic} on {spec.name} within {_COPY_WAIT_S:.0f} s")


def _seq(msg: Message) -> int:
    """The drill's sequence number a record carries as its value."""
    value = msg.value()
    if value is None:
        raise DrillFailed(f"a record without a value on {msg.topic()}[{msg.partition()}]")
    return int(value)


class KafkaWorkload:
    system = "kafka"
    route = ROUTE
    phase = ""

    def __init__(self, run: str) -> None:
        self.run = run
        self.topic = f"drill-{run}"

    def _config(self, ctx: DrillContext, name: str) -> dict[str, Any]:
        return {**ctx.etcd_config, "hotstandby.route": ROUTE, "hotstandby.namespace": ctx.namespace,
                "hotstandby.client.id": name}  # fmt: skip

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        for broker in ("kafka-a", "kafka-b"):
            _create_topic(rc.cluster_spec(broker), self.topic)
        # As in production, where a topic is replicated long before anyone fails over: the
        # group's members then all subscribe to the topic and its copy from the start.
        for source, target in (("kafka-a", "kafka-b"), ("kafka-b", "kafka-a")):
            _wait_topic(rc.cluster_spec(target), f"{source}{rc.link(source, target).separator}{self.topic}")

    def restarted(self, rc: RefCluster, broker: str) -> None:
        _create_topic(rc.cluster_spec(broker), self.topic)  # Tansu came back empty

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        """Nothing to do: the clients follow the flip by themselves."""

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        """Nothing to do: the clients follow the flip by themselves."""

    def produce(self, ctx: DrillContext) -> None:
        producer = Producer(self._config(ctx, "drill-producer"))
        try:
            began = time.monotonic()
            for seq in range(ctx.options.messages):
                ctx.pace(began, seq, serve=producer.poll)
                value = str(seq).encode()

                def report(err: Any, msg: Any, seq: int = seq) -> None:
                    ctx.tally.delivered(seq, err is None)
                    if err is not None:
                        log.warning("drill.delivery_failed", seq=seq, error=str(err))

                while not ctx.stop.is_set():
                    try:
                        producer.produce(self.topic, value=value, key=value, on_delivery=report)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
                if ctx.stop.is_set():
                    return
            while producer.flush(1.0) > 0:
                if time.monotonic() > ctx.deadline or ctx.stop.is_set():
                    raise DrillFailed(f"producer: {len(producer)} records still undelivered at the deadline")
        finally:
            ctx.resent = producer.resent
            ctx.replicated = producer.trimmed
            producer.close()

    def consume(self, ctx: DrillContext, index: int) -> None:
        name = f"drill-consumer-{index}"
        manual = index == ctx.options.consumers - 1
        config = {**self._config(ctx, name), "group.id": f"drill-{self.run}", "auto.commit.interval.ms": 200,
                  **ctx.options.kafka_consumer}  # fmt: skip
        if manual:
            config["enable.auto.commit"] = False
        consumer = Consumer(config)
        pending: list[Any] = []
        rnd = random.Random(index)

        def commit_pending(*_: Any) -> None:
            # Out of order: each record is committed on its own, in a shuffled order. A commit
            # refused (another member took the partition over since: ILLEGAL_GENERATION, as
            # Kafka's) was processed all the same, and may come again (drill/tally.py).
            rnd.shuffle(pending)
            done, refused = [], []
            for msg in pending:
                try:
                    consumer.commit(message=msg, asynchronous=False)
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError.ILLEGAL_GENERATION:
                        raise
                    refused.append(_seq(msg))
                    continue
                done.append(_seq(msg))
            ctx.tally.acknowledged(done)
            ctx.tally.refused(refused)
            pending.clear()

        try:
            consumer.subscribe([self.topic], on_revoke=commit_pending if manual else None)
            batch = rnd.randint(1, 20)
            last = time.monotonic()
            while not ctx.stop.is_set():
                before = consumer.cluster
                msg = consumer.poll(0.2)
                if msg is None and pending:
                    commit_pending()  # idle: nothing more to batch with
                if msg is None and time.monotonic() - last > _IDLE_REPORT_S:
                    last = time.monotonic()  # what a stalled drill needs explained
                    log.info("drill.consumer_idle", client=name, cluster=consumer.cluster,
                             assignment=[(tp.topic, tp.partition) for tp in consumer.assignment()])  # fmt: skip
                if msg is None or msg.error() is not None:
                    continue
                last = time.monotonic()
                seq = _seq(msg)
                ctx.tally.received(seq, before if consumer.cluster == before else None)
                if not manual:
                    ctx.tally.acknowledged([seq])
                    continue
                pending.append(msg)
                if len(pending) >= batch:
                    commit_pending()
                    batch = rnd.randint(1, 20)
            if manual and pending:
                commit_pending()
        finally:
            ctx.filtered[name] = consumer.filtered
            consumer.close()


WORKLOAD = KafkaWorkload  # the workload an integration's drill produces with (drill/systems.py)


def run(rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None) -> DrillReport:
    """The Kafka drill on the (running) reference cluster ``rc``."""
    return run_drill(rc, options, KafkaWorkload(new_run_id()), progress)
