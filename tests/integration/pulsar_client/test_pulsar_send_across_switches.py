"""A synchronous Pulsar ``send()`` loop across flips: the SDK's re-send never fails it."""

from __future__ import annotations

import signal
import threading
from collections import Counter

import _pulsar  # the message id class pulsar-client's send() returns
import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.pulsar_helpers import ROUTE, acknowledge_until, nothing_more
from tests.support import wait_for


class SendLoop(threading.Thread):
    """An application thread: ``send()`` in a loop, no try/except, as pulsar-client users write it."""

    def __init__(self, producer: object, count: int) -> None:
        super().__init__(daemon=True, name="app-send-loop")
        self.producer, self.count = producer, count
        self.ids: list[object] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            for i in range(self.count):
                self.ids.append(self.producer.send(f"m{i}".encode()))  # type: ignore[attr-defined]
        except BaseException as exc:  # the test reports it
            self.failure = exc

    def sent(self) -> int:
        return len(self.ids)

    def wait_more(self, more: int, what: str) -> None:
        """Wait until ``more`` further sends returned; fails on the first send that raised."""
        mark = self.sent() + more
        wait_for(lambda: self.sent() >= mark or self.failure, 30, what)
        assert self.failure is None, f"send() raised {what}: {self.failure!r}"


def test_a_send_loop_across_three_flips_one_with_the_broker_killed_never_fails(
    refcluster: RefCluster, client: Client, center: ConfigCenter, topic: str
) -> None:
    """The replay window (thousands of messages) is larger than the producer's queue (100): its
    re-send must wait for room instead of filling the queue the application's send needs."""
    count = 12_000
    producer = client.create_producer(topic, max_pending_messages=100, send_timeout_millis=20_000)
    loop = SendLoop(producer, count)
    loop.start()
    killed = False
    try:
        for step, (to, kill) in enumerate((("pulsar-b", False), ("pulsar-a", False), ("pulsar-b", True)), 1):
            loop.wait_more(1500, f"before flip {step}")  # a replay window several times the queue
            if kill:
                refcluster.kill("pulsar-a", signal.SIGKILL)
                killed = True
            center.switch(ROUTE, to, reason=f"flip {step}")
            wait_for(lambda: client.cluster == to or loop.failure, 30, f"the client to move to {to}")  # noqa: B023
            loop.wait_more(300, f"after flip {step}")
        loop.join(60)
        assert not loop.is_alive(), f"{loop.sent()} of {count} sends returned within the time"
        assert loop.failure is None, f"send() raised: {loop.failure!r}"
        assert len(loop.ids) == count and all(isinstance(i, _pulsar.MessageId) for i in loop.ids)
        producer.close()
        consumer = client.subscribe(topic, "check", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
        wanted = {f"m{i}" for i in range(count)}
        got = acknowledge_until(consumer, wanted, timeout=40)
        got += nothing_more(consumer, within=2.0)
        twice = sorted(v for v, n in Counter(got).items() if n > 1)
        assert not twice, f"handed out more than once: {twice[:10]}"
    finally:
        if killed:
            refcluster.restart("pulsar-a")


def test_a_refused_send_raises_the_class_pulsar_client_raises(client: Client, topic: str) -> None:
    """A batch held back for 10 s fills a queue of one message: the next send() is refused
    with pulsar.ProducerQueueIsFull, as by pulsar-client, not a bare PulsarException."""
    producer = client.create_producer(topic, max_pending_messages=1, batching_enabled=True,
                                      batching_max_publish_delay_ms=10_000)  # fmt: skip
    first: list[pulsar.Result] = []
    producer.send_async(b"first", lambda result, _id: first.append(result))
    with pytest.raises(pulsar.ProducerQueueIsFull):
        producer.send(b"second")
    producer.flush()
    assert first == [pulsar.Result.Ok]


def test_a_schema_producer_and_consumer_work_as_with_pulsar_client(client: Client, topic: str) -> None:
    """send(obj) encodes with the producer's schema, msg.value() decodes with the consumer's;
    the SDK's identity property rides along (properties are outside the schema), unseen."""
    from pulsar.schema import StringSchema

    consumer = client.subscribe(topic, "typed", schema=StringSchema(),
                                initial_position=pulsar.InitialPosition.Earliest)  # fmt: skip
    producer = client.create_producer(topic, schema=StringSchema())
    producer.send("text", properties={"k": "v"})
    producer.send_async("more", None)
    producer.flush()
    got = [consumer.receive(timeout_millis=10_000) for _ in range(2)]
    assert [m.value() for m in got] == ["text", "more"]
    assert got[0].data() == b"text" and got[0].properties()["k"] == "v" and got[0].properties() == {"k": "v"}
    with pytest.raises(TypeError):
        producer.send(b"bytes are not a string")  # refused by the schema, as by pulsar-client
    for m in got:
        consumer.acknowledge(m)
