"""A library's logging: silent unless the application configures logging, then stdlib records."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from pathlib import Path

from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.refcluster import RefCluster

# Produces, consumes and acknowledges 10 messages through the SDK, closes; configures logging
# only when asked to (argv[4] == "debug"). pulsar-client's own C++ logger writes to a file:
# that output is the application's choice, not the SDK's. Not a Python logger: with one,
# pulsar-client aborts at interpreter exit now and then ("terminate called without an active
# exception": 5 of 16 runs of the raw client here, none with a FileLogger).
APP = """
import logging, sys
import pulsar
from hotstandby.adapters.pulsar import Client

etcd, namespace, topic, mode, client_log = sys.argv[1:6]
if mode == "debug":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s|%(levelname)s|%(message)s")
quiet = pulsar.FileLogger(pulsar.LoggerLevel.Info, client_log)
client = Client("payments", etcd=etcd, namespace=namespace, logger=quiet, client_id="quiet-app")
consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                            initial_position=pulsar.InitialPosition.Earliest)
producer = client.create_producer(topic)
for i in range(10):
    producer.send(f"m{i}".encode())
for _ in range(10):
    consumer.acknowledge(consumer.receive(timeout_millis=30_000))
client.close()
"""


# A Kafka producer on a route whose cluster does not answer: librdkafka logs a failed
# connection every second or so, on stderr unless the configuration names a logger.
KAFKA_APP = """
import logging, sys, time
from hotstandby.adapters.kafka import Producer

etcd, namespace, mode = sys.argv[1:4]
if mode == "debug":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s|%(levelname)s|%(message)s")
producer = Producer({"hotstandby.route": "nowhere", "hotstandby.etcd": etcd, "hotstandby.namespace": namespace})
# The admin client the SDK keeps for a cluster (a consumer's group checks) logs the same way.
from confluent_kafka import KafkaException
from hotstandby.adapters.kafka.admin_clients import shared_admin
from hotstandby.configcenter.documents import ClusterSpec
try:
    shared_admin(ClusterSpec(name="gone", kind="kafka", url=sys.argv[4])).list_topics(timeout=0.5)
except KafkaException:
    pass
end = time.monotonic() + 3
while time.monotonic() < end:
    producer.poll(0.2)
producer.close()
"""


def _run_kafka(refcluster: RefCluster, center: ConfigCenter, tmp_path: Path, mode: str, gone: str) -> str:
    script = tmp_path / "kafka_app.py"
    script.write_text(KAFKA_APP)
    done = subprocess.run([sys.executable, str(script), f"127.0.0.1:{refcluster.ports.etcd}", center.keys.namespace,
                           mode, gone], check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout == "", done.stderr
    return done.stderr


def test_librdkafka_logs_through_the_sdk_logger_not_on_stderr(
    refcluster: RefCluster, center: ConfigCenter, tmp_path: Path
) -> None:
    with socket.socket() as sock:  # a free port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    center.put_cluster(ClusterSpec(name="kafka-gone", kind="kafka", url=f"127.0.0.1:{port}"))
    center.create_route("nowhere", ["kafka-gone"], "kafka-gone")
    gone = f"127.0.0.1:{port}"
    assert _run_kafka(refcluster, center, tmp_path, "none", gone) == "", "librdkafka printed on stderr"
    lines = _run_kafka(refcluster, center, tmp_path, "debug", gone).splitlines()
    failed = [line for line in lines if line.startswith("hotstandby.librdkafka|") and "Connection refused" in line]
    assert failed, "\n".join(lines[-20:])


def _run(refcluster: RefCluster, namespace: str, tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    topic = f"persistent://public/default/log-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "app.py"
    script.write_text(APP)
    return subprocess.run(
        [
            sys.executable,
            str(script),
            f"127.0.0.1:{refcluster.ports.etcd}",
            namespace,
            topic,
            mode,
            str(tmp_path / "pulsar-client.log"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_application_that_configures_no_logging_gets_no_output(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path
) -> None:
    done = _run(refcluster, namespace, tmp_path, "none")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", f"the SDK printed on stdout:\n{done.stdout[:2000]}"
    assert done.stderr == "", f"the SDK printed on stderr:\n{done.stderr[:2000]}"


def test_configured_logging_gets_the_events_as_stdlib_records_with_their_fields(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path
) -> None:
    done = _run(refcluster, namespace, tmp_path, "debug")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    ours = [line.split("|", 2) for line in done.stderr.splitlines() if line.startswith("hotstandby")]
    by_event = {msg.split(" ", 1)[0]: (name, level, msg) for name, level, msg in ours}
    name, level, msg = by_event["client.started"]
    assert (name, level) == ("hotstandby.client", "INFO")
    assert "client=quiet-app" in msg and "route=payments" in msg and "cluster=pulsar-a" in msg
    name, level, msg = by_event["ledger.flushed"]
    assert (name, level) == ("hotstandby.ledger", "DEBUG") and "records=" in msg
    assert all(name.startswith("hotstandby.") for name, _, _ in ours)
