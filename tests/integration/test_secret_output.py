"""A known secret, given every way a cluster definition or an application can give it, appears
in no output: CLI tables and ``--json``, log records at DEBUG (formatted, and their fields),
stdout and stderr of a process that configured no logging (librdkafka writes to fd 2), errors
and reprs, and the values the SDK writes under the namespace (presence, ledgers)."""

from __future__ import annotations

import functools
import json
import logging
import traceback
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException

from hotstandby.adapters.kafka import Consumer, Producer
from hotstandby.cli import main
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import HotStandbyError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.probe import probe_cluster
from hotstandby.logs import reset
from hotstandby.refcluster import Ports, RefCluster
from tests.integration.conftest import etcd_args
from tests.integration.kafka_helpers import create_topic, route_config

SECRET_VAR = "HS_TEST_SECRET"
# Tansu completes a group join after about session.timeout.ms / 2: the consumer joins twice.
_QUICK_JOIN = {"session.timeout.ms": 2000, "heartbeat.interval.ms": 500}


class Outputs:
    """Every text the test saw, with where it came from."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.seen: list[tuple[str, str]] = []

    def add(self, where: str, text: object) -> None:
        self.seen.append((where, str(text)))

    def error(self, where: str, exc: BaseException) -> None:
        """An error as a caller may show it: its text, its repr, its traceback with causes."""
        self.add(where, f"{exc}\n{exc!r}\n{''.join(traceback.format_exception(exc))}")

    def leaks(self) -> list[str]:
        """Where the secret was seen, each with the text around it (the secret as <SECRET>)."""
        found = []
        for where, text in self.seen:
            at = text.find(self.secret)
            if at >= 0:
                found.append(f"{where}: ...{text[max(at - 160, 0) : at + 60].replace(self.secret, '<SECRET>')}...")
        return found

    def assert_clean(self, *, at_least: int) -> None:
        assert len(self.seen) >= at_least, f"only {len(self.seen)} outputs collected"
        assert not self.leaks(), "the secret appeared in:\n" + "\n".join(self.leaks())


def _logged(outputs: Outputs, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Every record of every logger the test saw: its formatted text and its fields (the event
    dict, or a foreign record's arguments)."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    for record in caplog.records:
        outputs.add(f"log {record.name}", formatter.format(record))
        outputs.add(f"log fields {record.name}", f"{record.msg!r} {record.args!r}")
    return caplog.records


def _cli(
    outputs: Outputs, capfd: pytest.CaptureFixture[str], command: tuple[str, ...], where: list[str], *, code: int = 0
) -> tuple[str, str]:
    """Run a CLI command at debug level (-vv: its events rendered on stderr); returns its
    stdout and stderr."""
    exited = main([*command, *where, "-vv"])
    reset()  # the CLI configured hotstandby's logging; the application around it did not
    out, err = capfd.readouterr()
    outputs.add(f"cli {' '.join(command[:3])} stdout", out)
    outputs.add(f"cli {' '.join(command[:3])} stderr", err)
    assert exited == code, (command, err)
    return out, err


def _etcd_values(outputs: Outputs, center: ConfigCenter, when: str) -> list[str]:
    """Every key and value under the namespace; returns the keys."""
    kvs, _ = center.store.get_prefix(center.keys.namespace + "/")
    for kv in kvs:
        outputs.add(f"etcd {when} {kv.key}", kv.key + " " + kv.value.decode(errors="replace"))
    return [kv.key for kv in kvs]


def _raises(outputs: Outputs, where: str, call: Callable[[], Any]) -> None:
    # ValueError and TypeError: what confluent-kafka raises for a bad configuration (no group.id).
    with pytest.raises((HotStandbyError, KafkaException, ValueError, TypeError)) as info:
        call()
    outputs.error(where, info.value)


def _poll_values(consumer: Consumer, got: list[str], done: Callable[[], bool], timeout: float) -> None:
    def polled() -> bool:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append((msg.value() or b"").decode())
        return done()

    assert wait_until(polled, timeout, first=0.0, most=0.0), f"got {sorted(got)}"


def test_a_secret_by_reference_or_in_the_application_config_appears_in_no_output(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path,
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    secret = f"hs-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv(SECRET_VAR, secret)
    secret_file = tmp_path / "kafka-secret"
    secret_file.write_text(secret + "\n")
    outputs = Outputs(secret)
    where = etcd_args(refcluster, namespace)
    by_env, by_file = f"${{env:{SECRET_VAR}}}", f"${{file:{secret_file}}}"
    # Settings librdkafka takes next to a PLAINTEXT listener (and ignores there).
    for name in ("kafka-a", "kafka-b"):
        spec = center.cluster(name)
        center.put_cluster(replace(spec, client={**spec.client, "ssl.key.password": by_env},
                                   producer={**spec.producer, "sasl.oauthbearer.client.secret": by_file},
                                   consumer={**spec.consumer, "sasl.oauthbearer.client.secret": by_file}),
                           replace=True)  # fmt: skip
        resolved = center.cluster(name).client_config("consumer")
        assert resolved["ssl.key.password"] == resolved["sasl.oauthbearer.client.secret"] == secret
    # The application holds a secret of its own, literally; librdkafka's conf dump lists its settings.
    app = {"sasl.password": secret, "debug": "conf"}
    topic = f"secret-{uuid.uuid4().hex[:8]}"
    for name in ("kafka-a", "kafka-b"):
        create_topic(refcluster.cluster_spec(name), topic, 1)

    with caplog.at_level(logging.DEBUG):  # every logger, as an application logging at DEBUG
        _clients_across_a_flip(outputs, capfd, refcluster, center, namespace, topic, app)
        # Errors for configurations that carry the secret, from etcd and from the application.
        for name, client in (("kafka-bad-value", {"ssl.key.password": by_env, "acks": "bogus"}),
                             ("kafka-unset", {"ssl.key.password": by_env, "sasl.password": "${env:HS_TEST_UNSET}"})):  # fmt: skip
            center.put_cluster(ClusterSpec(name=name, kind="kafka", url=center.cluster("kafka-a").url, client=client))
            center.create_route(name, [name], name)
            _raises(outputs, name, functools.partial(Producer, route_config(refcluster, namespace,
                                                                            **{"hotstandby.route": name})))  # fmt: skip
        for label, extra in (("bad value", {"acks": "bogus"}), ("unknown setting", {"no.such.setting": "1"}),
                             ("bootstrap", {"bootstrap.servers": "127.0.0.1:1"}),
                             ("unknown hotstandby setting", {"hotstandby.sasl.password": secret})):  # fmt: skip
            _raises(outputs, label, functools.partial(Producer, route_config(refcluster, namespace, **app, **extra)))
        _raises(outputs, "no group.id", functools.partial(Consumer, route_config(refcluster, namespace, **app)))
        etcd_secret = {"hotstandby.route": "orders", "hotstandby.etcd.user": "app", "hotstandby.etcd.password": secret}
        options, _ = ClientOptions.split(etcd_secret, role="producer")
        outputs.add("repr etcd credentials", f"{options!r} {options.settings!r} {options.settings.etcd_security!r}")
        no_user = {**etcd_secret, "hotstandby.etcd.user": None}
        _raises(outputs, "etcd password without user", functools.partial(ClientOptions.split, no_user, role="producer"))

    out, err = capfd.readouterr()
    outputs.add("stdout and stderr while logging was configured", out + err)

    # An application that configured no logging.
    producer = Producer(route_config(refcluster, namespace, **app))
    producer.produce(topic, value="quiet")
    assert producer.flush(30) == 0
    producer.close()
    _raises(outputs, "bad value, no logging",
            functools.partial(Producer, route_config(refcluster, namespace, **app, acks="bogus")))  # fmt: skip
    out, err = capfd.readouterr()
    outputs.add("stdout without logging", out)
    outputs.add("stderr without logging", err)

    # The operator's view of it all.
    _cli(outputs, capfd, ("clusters", "add", "kafka-ref", "--kind", "kafka", "--url", "127.0.0.1:1",
                          "--set", f"sasl.password={by_env}"), where)  # fmt: skip
    listed = json.loads(_cli(outputs, capfd, ("clusters", "list", "--json"), where)[0])
    assert {c["name"]: c for c in listed["clusters"]}["kafka-a"]["client"]["ssl.key.password"] == by_env
    for command in (("clusters", "list"), ("routes", "list"), ("routes", "list", "--json"), ("status",),
                    ("status", "--json"), ("switch", "orders", "--to", "kafka-a", "--json")):  # fmt: skip
        _cli(outputs, capfd, command, where)
    records = _logged(outputs, caplog)
    events = {r.msg.get("event") for r in records if isinstance(r.msg, dict)}
    assert {"client.started", "producer.switched", "consumer.switched", "ledger.flushed"} <= events
    assert any(r.name == "hotstandby.librdkafka" and "sasl.password" in r.getMessage() for r in records), (
        "librdkafka's conf dump, naming the application's secret setting, was logged"
    )
    outputs.assert_clean(at_least=100)


def _clients_across_a_flip(
    outputs: Outputs, capfd: pytest.CaptureFixture[str], refcluster: RefCluster, center: ConfigCenter,
    namespace: str, topic: str, app: dict[str, Any],
) -> None:  # fmt: skip
    """A producer and a consumer of route ``orders`` with ``app``'s settings: created, used,
    moved to kafka-b, committed, closed; the namespace's values read while they run and after."""
    where = etcd_args(refcluster, namespace)
    producer = Producer(route_config(refcluster, namespace, **app, **{"hotstandby.client.id": "p-secret"}))
    consumer = Consumer(route_config(refcluster, namespace, **app, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                                      "auto.commit.interval.ms": 200, **_QUICK_JOIN}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got: list[str] = []
        for i in range(5):
            producer.produce(topic, value=f"a{i}")
        assert producer.flush(30) == 0
        _poll_values(consumer, got, lambda: len(got) >= 5, 60)
        _etcd_values(outputs, center, "before the flip")
        assert "p-secret" in _cli(outputs, capfd, ("status", "orders"), where)[0], "the producer's presence is shown"
        _cli(outputs, capfd, ("status", "orders", "--json"), where)

        center.switch("orders", "kafka-b", reason="secret test")
        assert wait_until(lambda: producer.cluster == "kafka-b", 30), "the producer did not move"
        for i in range(5):
            producer.produce(topic, value=f"b{i}")
        assert producer.flush(30) == 0
        _poll_values(consumer, got, lambda: consumer.cluster == "kafka-b" and len(got) >= 10, 60)
        consumer.commit(asynchronous=False)
        assert sorted(got) == [*(f"a{i}" for i in range(5)), *(f"b{i}" for i in range(5))]
        keys = _etcd_values(outputs, center, "after the flip")
        assert any(k.startswith(center.keys.clients) for k in keys), "presence documents were read"
        for name, obj in (("producer", producer), ("consumer", consumer)):
            outputs.add(f"repr {name}", f"{obj!r} {obj!s} {obj.options!r} {obj.route!r} {obj._spec!r}")
    finally:
        producer.close()
        consumer.close()
    assert any(k.startswith(center.keys.ledgers) for k in _etcd_values(outputs, center, "after close"))


def test_a_secret_stored_literally_is_shown_in_no_output_but_its_own_etcd_key(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """An operator may store a secret literally (--allow-literal, with a warning): the CLI, the
    logs and the errors still show it as ***, also in a URL's user:password@."""
    secret = f"hs-literal-{uuid.uuid4().hex}"
    outputs = Outputs(secret)
    where = etcd_args(refcluster, namespace)
    pulsar = center.cluster("pulsar-b").url
    with_password = pulsar.replace("pulsar://", f"pulsar://svc:{secret}@")
    with caplog.at_level(logging.DEBUG):
        _cli(outputs, capfd, ("clusters", "add", "pulsar-pw", "--kind", "pulsar", "--url", with_password,
                              "--set", f"auth_params={secret}", "--allow-literal"), where)  # fmt: skip
        _cli(outputs, capfd, ("clusters", "add", "kafka-pw", "--kind", "kafka", "--url", center.cluster("kafka-b").url,
                              "--set", f"ssl.key.password={secret}", "--set",
                              f"sasl.oauthbearer.token.endpoint.url=https://app:{secret}@127.0.0.1:1/token",
                              "--allow-literal"), where)  # fmt: skip
        no_port = f"pulsar://svc:{secret}@127.0.0.1"
        _, err = _cli(outputs, capfd, ("clusters", "add", "pulsar-no-port", "--kind", "pulsar", "--url", no_port,
                                       "--allow-literal"), where, code=1)  # fmt: skip
        assert "service_url must be" in err
        # A definition written by other means, not valid: listed among the invalid ones, and logged.
        invalid = json.dumps({"kind": "pulsar", "service_url": no_port})
        center.store.put(center.keys.cluster("pulsar-bad"), invalid.encode())
        with pytest.raises(HotStandbyError) as info:
            ClusterSpec.from_json("pulsar-bad", invalid)
        outputs.error("parsing the invalid definition", info.value)
        dead = f"pulsar://svc:{secret}@127.0.0.1:{Ports.free().pulsar_a}"
        _cli(outputs, capfd, ("clusters", "add", "pulsar-dead", "--kind", "pulsar", "--url", dead, "--allow-literal"),
             where)  # fmt: skip
        center.create_route("literal", ["pulsar-b", "pulsar-pw", "pulsar-dead"], "pulsar-b")
        probe = probe_cluster(center.cluster("pulsar-pw"), timeout=2.0)
        outputs.add("probe", repr(probe))
        assert probe.ok, "the broker is probed, not the URL's user:password@"
        outputs.add("repr of the definitions", f"{center.cluster('pulsar-pw')!r} {center.cluster('kafka-pw')!r}")
        for command in (("clusters", "list"), ("clusters", "list", "--json"), ("status",), ("status", "--json"),
                        ("status", "literal"), ("status", "literal", "--json"),
                        ("switch", "literal", "--to", "pulsar-pw", "--json")):  # fmt: skip
            _cli(outputs, capfd, command, where)
        _, err = _cli(outputs, capfd, ("switch", "literal", "--to", "pulsar-dead", "--probe-timeout", "0.5"), where,
                      code=1)  # fmt: skip
        assert "does not answer" in err
    kvs, _ = center.store.get_prefix(center.keys.clusters)
    assert sum(secret in kv.value.decode() for kv in kvs) == 4, "stored literally, as the operator forced"
    assert any(r.getMessage().startswith("document.invalid") for r in _logged(outputs, caplog))
    outputs.assert_clean(at_least=30)
