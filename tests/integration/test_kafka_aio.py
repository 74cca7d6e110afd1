"""The asyncio Kafka facades (``hotstandby.adapters.kafka.aio``) on the reference cluster: an
asyncio workload across a flip, a failback and a flip with the primary killed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition

from hotstandby.adapters.kafka.aio import AIOConsumer, AIOProducer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.aio_flips import Flips, LoopLag, exactly_once, until
from tests.integration.kafka_helpers import create_topic, route_config

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache


class Reading:
    """A consumer's read loop: values of the records it returned, and the assignments its
    coroutine ``on_assign`` made (it calls ``assign`` back, as confluent-kafka's examples do)."""

    def __init__(self, consumer: AIOConsumer) -> None:
        self.consumer = consumer
        self.values: list[str] = []
        self.assigned: list[list[TopicPartition]] = []
        self.stopped = False

    async def on_assign(self, consumer: AIOConsumer, partitions: list[TopicPartition]) -> None:
        assert consumer is self.consumer
        self.assigned.append(partitions)
        await consumer.assign(partitions)

    async def run(self) -> None:
        while not self.stopped:
            msg = await self.consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.values.append(msg.value().decode())


class Sending:
    """A producer's loop: a few records every 10 ms, each awaited through its future."""

    def __init__(self, producer: AIOProducer, topic: str) -> None:
        self.producer, self.topic = producer, topic
        self.deliveries: list[asyncio.Future[Any]] = []
        self.values: list[str] = []
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            for _ in range(5):
                value = f"v{len(self.values)}"
                self.values.append(value)
                self.deliveries.append(await self.producer.produce(self.topic, value=value.encode()))
            await asyncio.sleep(0.01)

    async def delivered(self) -> set[str]:
        left = await self.producer.flush(60)
        try:
            outcomes = await asyncio.wait_for(asyncio.gather(*self.deliveries, return_exceptions=True), 30)
        except TimeoutError:
            undelivered = sum(1 for d in self.deliveries if not d.done())
            raise AssertionError(f"{undelivered} deliveries never reported ({left} left after the flush)") from None
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert failed == [], f"{len(failed)} deliveries failed, first: {failed[:1]}"
        return set(self.values)


def test_an_asyncio_workload_follows_a_flip_a_failback_and_a_flip_with_the_primary_killed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"aio-{uuid.uuid4().hex[:8]}"
    for cluster in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(cluster), topic, 2)
    group = f"g-{uuid.uuid4().hex[:6]}"

    async def scenario() -> tuple[set[str], list[str]]:
        lag = LoopLag()
        lag.start()
        producer = AIOProducer(route_config(refcluster, namespace, **{"message.timeout.ms": 120_000}),
                               batch_size=20, buffer_timeout=0.05)  # fmt: skip
        consumers = [AIOConsumer(route_config(refcluster, namespace, **{"group.id": group,
                                                                         "auto.commit.interval.ms": 200}))
                     for _ in range(2)]  # fmt: skip
        readers = [Reading(c) for c in consumers]
        sending = Sending(producer, topic)
        try:
            await consumers[0].subscribe([topic], on_assign=readers[0].on_assign)
            await consumers[1].subscribe([topic])
            tasks = [asyncio.create_task(r.run()) for r in (*readers, sending)]
            flips = Flips(refcluster, center, "orders", lambda: [producer.cluster, *(c.cluster for c in consumers)])
            await until(lambda: len(readers[0].values) + len(readers[1].values) >= 200, 60, lambda: "records read")
            for to, kill in (("kafka-b", None), ("kafka-a", None), ("kafka-b", "kafka-a")):
                await flips.flip(to, kill=kill)
                mark = len(sending.values)
                await until(lambda m=mark: len(sending.values) >= m + 200, 60, lambda: "records sent after the flip")
            sending.stopped = True
            await tasks[-1]
            sent = await sending.delivered()
            await until(lambda: sent <= set(readers[0].values + readers[1].values), 90,
                        lambda: f"{len(sent - set(readers[0].values + readers[1].values))} records not read")  # fmt: skip
            await asyncio.sleep(2)  # anything read twice would come now
            for r in readers:
                r.stopped = True
            await asyncio.gather(*tasks[:-1])
            assert readers[0].assigned, "on_assign was called, and its assign() returned"
            return sent, readers[0].values + readers[1].values
        finally:
            await producer.close()
            for c in consumers:
                await c.close()
            await lag.stop()
            flips.check_holds(lag, "asyncio Kafka")

    exactly_once(*asyncio.run(scenario()))


def test_calls_after_close_and_outside_a_loop_fail_as_confluent_kafkas(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    with pytest.raises(RuntimeError, match="no running event loop"):
        AIOConsumer(route_config(refcluster, namespace, **{"group.id": "g"}))

    async def closed() -> None:
        consumer = AIOConsumer(route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}"}))
        await consumer.close()
        with pytest.raises(RuntimeError, match="Consumer closed"):
            await consumer.poll(0.1)
        producer = AIOProducer(route_config(refcluster, namespace))
        await producer.close()
        with pytest.raises(RuntimeError):  # as confluent-kafka's: its executor is shut down
            await producer.list_topics(timeout=5)
        with pytest.raises(KafkaException):
            unknown = AIOProducer({**route_config(refcluster, namespace), "no.such.property": 1})
            await unknown.close()

    asyncio.run(closed())
