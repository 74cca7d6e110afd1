"""Kafka over TLS: the SDK's clients, probes and ``hotstandby status`` against TLS listeners
whose cluster definitions say ``security.protocol: SSL`` and name the CA.

Tansu (0.6.0, the reference Kafka broker) cannot serve TLS: its ``--cert`` and ``--key`` are in
one exclusive argument group (given both, it refuses to start; its TLS configuration needs
both), and its accept loop serves the plain TCP stream whatever the listener URL's scheme
(``tls://``, ``ssl://``) or flags. So each broker here is a real Tansu on a plaintext loopback
port behind a TLS front (:mod:`tests.integration.tls_front`) that terminates TLS with a server
certificate from a local CA; the broker advertises the front's port, so every connection a
client makes, after bootstrap too, goes through TLS.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Message

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.adapters.kafka.wire.probe import probe as kafka_probe
from hotstandby.cli import main
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec, Link
from hotstandby.failover.probe import ProtocolError, probe_cluster
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.binaries import find_binaries
from hotstandby.refcluster.certs import LocalCA
from hotstandby.refcluster.kafka import KAFKA_OVERRIDES
from hotstandby.refcluster.processes import spawn, stop_pid, wait_ready
from tests.integration.conftest import etcd_args
from tests.integration.kafka_helpers import create_topic, route_config
from tests.integration.tls_front import HOST, TlsFront
from tests.support import capture_logs, wait_for

pytestmark = pytest.mark.integration

ROUTE = "tls-orders"
BROKERS = ("tls-a", "tls-b")


@dataclass(frozen=True)
class TlsKafka:
    ca: Path
    other_ca: Path  # a CA that signed none of the brokers' certificates
    ports: dict[str, int]  # broker name -> its TLS listener's port

    def spec(self, name: str, **client: Any) -> ClusterSpec:
        """``name``'s definition: TLS with this CA unless ``client`` says otherwise."""
        settings = {"security.protocol": "SSL", "ssl.ca.location": str(self.ca), **client}
        return ClusterSpec(name=name, kind="kafka", url=f"{HOST}:{self.ports[name]}",
                           client={k: v for k, v in settings.items() if v is not None}, **KAFKA_OVERRIDES)  # fmt: skip


def free_port() -> int:
    with socket.create_server((HOST, 0)) as s:
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tls_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsKafka]:
    """Two Tansu brokers, each behind its own TLS listener (server certificate for 127.0.0.1
    from a local CA), stopped by PID afterwards."""
    work = tmp_path_factory.mktemp("kafka-tls")
    ca = LocalCA(work / "ca")
    server = ca.issue("kafka-server", server=True)
    other = LocalCA(work / "other-ca")
    env = {**os.environ, "NO_COLOR": "1"}  # the flags below win over Tansu's environment variables
    started: list[tuple[int, list[str]]] = []
    fronts: list[TlsFront] = []
    try:
        for name in BROKERS:
            front = TlsFront(server.cert, server.key)
            fronts.append(front)
            plain = free_port()
            argv = [find_binaries().tansu, "broker", "--listener-url", f"tcp://{HOST}:{plain}",
                    "--advertised-listener-url", f"tcp://{HOST}:{front.port}", "--cluster-id", name,
                    "--storage-engine", "memory://tansu/"]  # fmt: skip
            log_path = work / f"{name}.log"
            proc = spawn(argv, log_path=log_path, cwd=work, env=env)
            started.append((proc.pid, argv))
            wait_ready(name, proc, lambda port=plain: kafka_probe(HOST, port, 1.0), timeout=30,
                       log_path=log_path, retry_on=(OSError, ProtocolError))  # fmt: skip
            front.start(plain)
        yield TlsKafka(ca.cert_path, other.cert_path, {name: f.port for name, f in zip(BROKERS, fronts, strict=True)})
    finally:
        for front in fronts:
            front.close()
        for pid, argv in started:
            stop_pid(pid, argv)


@pytest.fixture
def tls_route(tls_kafka: TlsKafka, center: ConfigCenter) -> str:
    """The TLS clusters, MM2's links between them both ways (so a switching consumer looks up
    MM2's checkpoints there) and a route, in the test's namespace; returns the route."""
    for name in BROKERS:
        center.put_cluster(tls_kafka.spec(name))
    for source, target in (BROKERS, BROKERS[::-1]):
        center.put_link(Link(source=source, target=target, policy="prefix"))
    center.create_route(ROUTE, list(BROKERS), BROKERS[0])
    return ROUTE


def consume_values(consumer: Consumer, wanted: set[str], timeout: float = 30.0) -> list[str]:
    got: list[str] = []

    def arrived() -> bool:
        msg: Message | None = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append((msg.value() or b"").decode())
        return wanted <= set(got)

    wait_for(arrived, timeout, f"{sorted(wanted)} through TLS")
    return got


def test_the_sdk_producer_and_consumer_go_through_tls_and_follow_a_flip(
    tls_kafka: TlsKafka, tls_route: str, refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    for name in BROKERS:
        create_topic(tls_kafka.spec(name), topic, 1)
    # On tls-b, what MM2 would have made: the copy of tls-a's topic and the checkpoints topic, so
    # the consumer arriving there looks its group's checkpoints up (through TLS too).
    for copy in (f"{BROKERS[0]}.{topic}", f"{BROKERS[0]}.checkpoints.internal"):
        create_topic(tls_kafka.spec(BROKERS[1]), copy, 1)
    config = route_config(refcluster, namespace, **{"hotstandby.route": tls_route})
    producer = Producer(config)
    consumer = Consumer({**config, "group.id": f"g-{uuid.uuid4().hex[:6]}"})
    with capture_logs() as events:
        try:
            consumer.subscribe([topic])
            before = [f"a{i}" for i in range(5)]
            for v in before:
                producer.produce(topic, value=v)
            assert producer.flush(20) == 0
            got = consume_values(consumer, set(before))
            consumer.commit(asynchronous=False)

            center.switch(tls_route, BROKERS[1], reason="test")
            wait_for(lambda: producer.cluster == BROKERS[1], 20, "the producer on tls-b")
            after = [f"b{i}" for i in range(5)]
            for v in after:
                producer.produce(topic, value=v)
            assert producer.flush(20) == 0
            got += consume_values(consumer, set(after))
            assert consumer.cluster == BROKERS[1]
        finally:
            consumer.close()
            producer.close()
    assert sorted(got) == sorted(before + after), "lost or duplicated"
    # The switch's group checks (is the group on tls-a settled?) and its start-position lookup
    # (MM2's checkpoints on tls-b) reached the TLS brokers; none failed as if they were down.
    failed = [e for e in events if e["event"] in ("consumer.describe_failed", "consumer.lookup_failed")]
    assert failed == [], failed


def test_a_probe_answers_over_tls_and_names_a_certificate_problem(tls_kafka: TlsKafka) -> None:
    good = probe_cluster(tls_kafka.spec("tls-a"), timeout=3.0)
    assert good.ok, good.detail
    assert good.detail.startswith("kafka protocol") and good.detail.endswith("TLS")

    wrong_ca = probe_cluster(tls_kafka.spec("tls-a", **{"ssl.ca.location": str(tls_kafka.other_ca)}), timeout=3.0)
    assert not wrong_ca.ok
    assert "certificate verify failed" in wrong_ca.detail, wrong_ca.detail

    plain_spec = tls_kafka.spec("tls-a", **{"security.protocol": None, "ssl.ca.location": None})
    assert not plain_spec.uses_tls
    plaintext = probe_cluster(plain_spec, timeout=3.0)
    assert not plaintext.ok, plaintext.detail


def test_status_shows_the_tls_clusters_answering(
    tls_kafka: TlsKafka, tls_route: str, refcluster: RefCluster, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["status", tls_route, "--json", *etcd_args(refcluster, namespace)])
    out = capsys.readouterr().out
    assert code == 0
    clusters = {c["name"]: c for c in json.loads(out)["clusters"]}
    assert set(clusters) == set(BROKERS)
    for name in BROKERS:
        assert clusters[name]["answering"], clusters[name]
        assert clusters[name]["detail"].endswith("TLS")
    code = main(["status", tls_route, *etcd_args(refcluster, namespace)])
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("tls-")}
    assert code == 0 and all(rows[name][3] == "yes" for name in BROKERS), rows
