"""The Kafka Producer runs on the config center it is given: no etcd (its endpoint here
answers nothing); librdkafka connects to the broker only when it sends."""

from __future__ import annotations

import socket

from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.switch_protocol import SwitchParticipant


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_producer_uses_the_center_passed_in_and_leaves_it_open() -> None:
    center = ConfigCenter(MemoryStore())
    center.put_cluster(ClusterSpec(name="kafka-a", kind="kafka", url=f"127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["kafka-a"], "kafka-a")
    producer = Producer({"hotstandby.route": "r", "hotstandby.etcd": f"127.0.0.1:{_closed_port()}"}, center=center)
    try:
        assert producer.cluster == "kafka-a"
        assert isinstance(producer._switch, SwitchParticipant)
        assert not isinstance(producer, SwitchParticipant), "the protocol's methods are not on the public surface"
    finally:
        producer.close(timeout=0)
    assert center.route("r").active == "kafka-a"  # still open: it belongs to the caller
