"""The asyncio Pulsar facade (``hotstandby.adapters.pulsar.asyncio``) on the reference cluster:
an asyncio workload across a flip, a failback and a flip with the primary killed; errors as
``pulsar.asyncio`` raises them."""

from __future__ import annotations

import asyncio
import uuid

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client as BlockingClient
from hotstandby.adapters.pulsar.asyncio import Client, Consumer, Producer, PulsarException
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.aio_flips import Flips, LoopLag, exactly_once, until
from tests.integration.pulsar_helpers import quiet, replicated

# Part of the real-broker tier: the same test on both reference clusters.
pytestmark = pytest.mark.apache

ROUTE = "payments"
_IN_FLIGHT = 50  # sends awaited at once


def make_client(refcluster: RefCluster, namespace: str) -> Client:
    return Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                  operation_timeout_seconds=10, logger=quiet())  # fmt: skip


class Sending:
    """Sends numbered values, up to ``_IN_FLIGHT`` awaited at once."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.values: list[str] = []
        self.failures: list[BaseException] = []
        self.stopped = False

    async def _send(self, value: str, room: asyncio.Semaphore) -> None:
        try:
            msg_id = await self.producer.send(value.encode(), properties={"v": value})
            assert isinstance(msg_id, pulsar.MessageId)
        except BaseException as exc:  # the test reports it
            self.failures.append(exc)
        finally:
            room.release()

    async def run(self) -> None:
        room = asyncio.Semaphore(_IN_FLIGHT)
        pending: set[asyncio.Task[None]] = set()
        while not self.stopped:
            await room.acquire()
            value = f"m{len(self.values)}"
            self.values.append(value)
            task = asyncio.create_task(self._send(value, room))
            pending.add(task)
            task.add_done_callback(pending.discard)
            if len(self.values) % 10 == 0:
                await asyncio.sleep(0.01)
        await asyncio.gather(*pending)


class Receiving:
    """Receives and acknowledges; a receive is given up every 200 ms (``wait_for``), as
    applications do, which must lose nothing."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.values: list[str] = []
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            try:
                msg = await asyncio.wait_for(self.consumer.receive(), 0.2)
            except asyncio.TimeoutError:
                continue
            self.values.append(msg.data().decode())
            await self.consumer.acknowledge(msg)


def test_an_asyncio_workload_follows_a_flip_a_failback_and_a_flip_with_the_primary_killed(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"persistent://public/default/aio-{uuid.uuid4().hex[:8]}"
    replicated(refcluster, topic)

    async def scenario() -> tuple[set[str], list[str]]:
        lag = LoopLag()
        lag.start()
        client = make_client(refcluster, namespace)
        flips = Flips(refcluster, center, ROUTE, lambda: [client.cluster])
        try:
            consumers = [await client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                                initial_position=pulsar.InitialPosition.Earliest)
                         for _ in range(2)]  # fmt: skip
            producer = await client.create_producer(topic, send_timeout_millis=60_000)
            sending, receiving = Sending(producer), [Receiving(c) for c in consumers]
            tasks = [asyncio.create_task(w.run()) for w in (*receiving, sending)]

            def received() -> list[str]:
                return receiving[0].values + receiving[1].values

            await until(lambda: len(received()) >= 200, 60, lambda: "messages received")
            for to, kill in (("pulsar-b", None), ("pulsar-a", None), ("pulsar-b", "pulsar-a")):
                await flips.flip(to, kill=kill)
                mark = len(sending.values)
                await until(lambda m=mark: len(sending.values) >= m + 200, 60, lambda: "messages sent after the flip")
            sending.stopped = True
            await tasks[-1]
            assert sending.failures == [], f"{len(sending.failures)} sends failed, first: {sending.failures[:1]}"
            sent = set(sending.values)
            await until(lambda: sent <= set(received()), 90, lambda: f"{len(sent - set(received()))} not received")
            await asyncio.sleep(2)  # anything handed out twice would come now
            for r in receiving:
                r.stopped = True
            await asyncio.gather(*tasks[:-1])
            return sent, received()
        finally:
            await client.close()
            await lag.stop()
            flips.check_holds(lag, "asyncio Pulsar")

    exactly_once(*asyncio.run(scenario()))


def test_failures_raise_pulsar_asyncios_exception(refcluster: RefCluster, center: ConfigCenter, namespace: str) -> None:
    topic = f"persistent://public/default/aio-{uuid.uuid4().hex[:8]}"

    async def failures() -> None:
        client = make_client(refcluster, namespace)
        try:
            consumer = await client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
            producer = await client.create_producer(topic)
            msg_id = await producer.send(b"one")
            got = await asyncio.wait_for(consumer.receive(), 30)
            assert got.data() == b"one" and isinstance(msg_id, pulsar.MessageId)
            with pytest.raises(PulsarException) as refused:
                await consumer.acknowledge_cumulative(got)
            assert refused.value.error() == pulsar.Result.CumulativeAcknowledgementNotAllowedError
            await consumer.acknowledge(got)
            await producer.close()
            with pytest.raises(PulsarException) as closed:
                await producer.send(b"late")
            assert closed.value.error() == pulsar.Result.AlreadyClosed
            with pytest.raises(ValueError, match="invalid messageid"):
                await consumer.seek("earliest")  # type: ignore[arg-type]
        finally:
            await client.close()

    asyncio.run(failures())


def test_a_failing_token_supplier_is_named_in_the_error_as_pulsar_asyncio(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    """pulsar.asyncio raises the supplier's own words (its ``_v2`` calls carry them); so do the
    facade's coroutines, which run the blocking facade's calls."""

    def supplier() -> str:
        raise RuntimeError("token supplier failed")

    auth = pulsar.AuthenticationToken(supplier)
    topic = f"persistent://public/default/aio-auth-{uuid.uuid4().hex[:8]}"
    raw_url = center.clusters()[center.route(ROUTE).active].url

    async def failures(client: Client | pulsar.asyncio.Client) -> list[tuple[pulsar.Result, str]]:
        seen = []
        for call in (lambda: client.create_producer(topic), lambda: client.subscribe(topic, "s"),
                     lambda: client.create_reader(topic, pulsar.MessageId.earliest)):  # fmt: skip
            with pytest.raises(PulsarException) as failed:
                await call()
            seen.append((failed.value.error(), str(failed.value)))
        await client.close()
        return seen

    raw = asyncio.run(failures(pulsar.asyncio.Client(raw_url, authentication=auth, logger=quiet())))
    facade = asyncio.run(failures(Client(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace,
                                         authentication=auth, logger=quiet())))  # fmt: skip
    assert [error for error, _ in facade] == [error for error, _ in raw] == [pulsar.Result.AuthenticationError] * 3
    for _, text in raw + facade:
        assert "token supplier failed" in text
    with BlockingClient(ROUTE, etcd=f"127.0.0.1:{refcluster.ports.etcd}", namespace=namespace, authentication=auth,
                        logger=quiet()) as blocking, pytest.raises(pulsar.AuthenticationError, match="supplier failed"):  # fmt: skip
        blocking.create_producer(topic)  # the blocking facade's text says it too (pulsar-client's does not)
