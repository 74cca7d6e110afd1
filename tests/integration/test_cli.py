"""The operator CLI against the reference etcd."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotstandby.cli import main
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.refcluster import Ports, RefCluster
from tests.integration.conftest import etcd_args


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_literal_secret_is_refused_and_never_shown(
    refcluster: RefCluster, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "KNOWN-cli-secret-4711"
    where = etcd_args(refcluster, namespace)
    add = ("clusters", "add", "--kind", "kafka", "--url", "127.0.0.1:1")
    code, out, err = run(capsys, *add, "lit", "--set", f"sasl.password={secret}", *where)
    assert code == 1 and "sasl.password" in err and "${env:NAME}" in err
    outputs = [out, err]
    code, out, err = run(capsys, *add, "ref", "--set", "sasl.password=${env:KAFKA_PW}", *where)
    assert code == 0 and "warning" not in err
    code, out, err = run(capsys, *add, "forced", "--set", f"ssl.key.password={secret}", "--allow-literal", *where)
    assert code == 0 and "warning: ssl.key.password stored literally" in err
    outputs += [out, err]
    for command in (("clusters", "list", "--json"), ("clusters", "list"), ("status", "--json")):
        code, out, err = run(capsys, *command, *where)
        outputs += [out, err]
    listed = {c["name"]: c for c in json.loads(outputs[-6])["clusters"]}
    assert listed["ref"]["client"] == {"sasl.password": "${env:KAFKA_PW}"}, "a reference is shown as it is"
    assert listed["forced"]["client"] == {"ssl.key.password": "***"}
    assert not [o for o in outputs if secret in o], "the secret appeared in the output"


def test_clusters_and_routes_can_be_defined_and_listed(
    refcluster: RefCluster, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    assert (
        run(capsys, "clusters", "add", "k1", "--kind", "kafka", "--url", "127.0.0.1:1", "--set", "acks=all", *where)[0]
        == 0
    )
    assert run(capsys, "clusters", "add", "k2", "--kind", "kafka", "--url", "127.0.0.1:2", *where)[0] == 0
    code, _, err = run(capsys, "clusters", "add", "k2", "--kind", "kafka", "--url", "127.0.0.1:3", *where)
    assert code == 1 and "already exists" in err
    code, _, err = run(capsys, "clusters", "add", "bad", "--kind", "kafka", "--url", "no-port", *where)
    assert code == 1 and "host:port" in err

    code, out, _ = run(capsys, "clusters", "list", "--json", *where)
    clusters = {c["name"]: c for c in json.loads(out)["clusters"]}
    assert set(clusters) == {"k1", "k2"} and clusters["k1"]["client"] == {"acks": "all"}

    code, out, _ = run(capsys, "routes", "create", "r", "--clusters", "k1,k2", "--active", "k2", "--json", *where)
    assert code == 0 and (json.loads(out)["active"], json.loads(out)["epoch"]) == ("k2", 1)
    code, _, err = run(capsys, "routes", "create", "r2", "--clusters", "k1,ghost", *where)
    assert code == 1 and "unknown cluster 'ghost'" in err
    code, out, _ = run(capsys, "routes", "list", *where)
    assert code == 0 and out.splitlines()[1].split()[:4] == ["r", "k2", "1", "k1,k2"]


def test_switch_refusals_exit_1_with_a_reason(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    for target, reason in [
        ("kafka-a", "already active"),
        ("pulsar-b", "is a pulsar cluster"),
        ("nope", "unknown cluster"),
    ]:
        code, out, err = run(capsys, "switch", "orders", "--to", target, *where)
        assert (code, out) == (1, "") and reason in err
    assert center.route("orders").epoch == 1


def test_status_with_unreachable_etcd_fails_fast_and_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    nobody = Ports.free().etcd
    started = time.monotonic()
    code, out, err = run(capsys, "status", "--etcd", f"127.0.0.1:{nobody}")
    assert code == 1 and out == ""
    assert "etcd unavailable" in err
    assert time.monotonic() - started < 10


DEEP = b"[" * 10_000 + b"]" * 10_000


def test_poisoned_values_are_listed_as_invalid_with_the_reason_never_a_traceback(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    center.put_cluster(ClusterSpec(name="kafka-c", kind="kafka", url="127.0.0.1:9"))
    center.create_route("uses-c", ["kafka-a", "kafka-c"], "kafka-a")
    center.store.put(center.keys.cluster("kafka-c"), DEEP)
    center.store.put(center.keys.route("poisoned"), DEEP)
    center.store.put(center.keys.route("control"), json.dumps({"active": "kafka-a", "clusters": ["kafka-a", "kafka-b"],
                                                               "epoch": 1, "reason": "\x1b[2J\nx"}).encode())  # fmt: skip
    center.switch("orders", "kafka-b")
    center.store.put(center.keys.route("orders"), json.dumps({"active": "kafka-a", "clusters": ["kafka-a", "kafka-b"],
                                                             "epoch": 1}).encode())  # fmt: skip
    capsys.readouterr()  # what the setup logged

    code, out, err = run(capsys, "routes", "list", "--json", *where)
    assert code == 0 and "Traceback" not in err
    listed = json.loads(out)
    assert sorted(r["name"] for r in listed["routes"]) == ["control", "payments"]
    reasons = {i["key"].rsplit("/", 1)[-1]: i["reason"] for i in listed["invalid"]}
    assert "nested deeper" in reasons["poisoned"]
    assert "'kafka-c' has an invalid definition" in reasons["uses-c"]
    assert "epoch 1 is not greater than the last epoch 2" in reasons["orders"]
    code, out, _ = run(capsys, "routes", "list", *where)
    assert code == 0 and "invalid:" in out and "\x1b" not in out and "\\x1b[2J\\nx" in out

    code, out, err = run(capsys, "clusters", "list", *where)
    assert code == 0 and "kafka-c" in out.split("invalid:")[1] and "nested deeper" in out

    code, out, err = run(capsys, "status", "--json", *where)
    assert code == 0 and "Traceback" not in err
    keys = {i["key"] for i in json.loads(out)["invalid"]}
    assert {center.keys.route("poisoned"), center.keys.cluster("kafka-c"), center.keys.route("orders")} <= keys
    code, out, err = run(capsys, "status", "poisoned", *where)
    assert code == 1 and "nested deeper" in out and "Traceback" not in err

    # A poisoned route cannot be read, so a switch of it starts over from its epoch floor...
    code, _, err = run(capsys, "switch", "poisoned", "--to", "kafka-b", *where)
    assert code == 1 and "nested deeper" in err and "Traceback" not in err
    # ...and the stale one is repaired by the next switch, above its floor.
    code, out, err = run(capsys, "switch", "orders", "--to", "kafka-b", "--json", *where)
    assert code == 0, err
    assert (json.loads(out)["epoch"], json.loads(out)["previous_epoch"]) == (3, 1)


def test_a_deleted_route_created_again_continues_from_its_last_epoch(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    assert run(capsys, "switch", "orders", "--to", "kafka-b", *where)[0] == 0
    code, out, _ = run(capsys, "routes", "delete", "orders", *where)
    assert code == 0 and "starts at epoch 3" in out
    code, out, _ = run(capsys, "routes", "create", "orders", "--clusters", "kafka-a,kafka-b", "--json", *where)
    assert code == 0 and json.loads(out)["epoch"] == 3


def test_concurrent_switches_with_expect_epoch_exactly_one_wins(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    # The console script of the interpreter running the tests (PATH may name another install).
    script = shutil.which("hotstandby", path=str(Path(sys.executable).parent))
    assert script, "the hotstandby console script is not installed"
    for round_ in range(4):
        route = center.route("orders")
        to = "kafka-b" if route.active == "kafka-a" else "kafka-a"
        argv = [script, "switch", "orders", "--to", to, "--expect-epoch", str(route.epoch)]
        procs = [
            subprocess.Popen(
                [*argv, "--reason", f"sre {i}", *etcd_args(refcluster, namespace)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
        codes = sorted(code for code, _, _ in results)
        assert codes == [0, 1], (round_, results)
        loser = next(err for code, _, err in results if code == 1)
        assert "not the expected" in loser or "changed while switching" in loser, loser
        assert center.route("orders").epoch == route.epoch + 1


def test_switch_refuses_a_cluster_that_does_not_answer_unless_forced(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    dead = Ports.free().kafka_a
    center.put_cluster(ClusterSpec(name="kafka-dead", kind="kafka", url=f"127.0.0.1:{dead}"))
    center.create_route("to-dead", ["kafka-a", "kafka-dead"], "kafka-a")
    capsys.readouterr()  # what the setup logged
    code, out, err = run(capsys, "switch", "to-dead", "--to", "kafka-dead", "--probe-timeout", "0.5", *where)
    assert (code, out) == (1, "") and "'kafka-dead'" in err and "does not answer" in err and "--force" in err
    assert center.route("to-dead").epoch == 1
    code, out, _ = run(capsys, "switch", "to-dead", "--to", "kafka-dead", "--force", *where)
    assert code == 0 and "epoch 1 -> 2" in out
    # Forced onto a cluster that does not answer: status says so, exit status 3.
    code, out, _ = run(capsys, "status", "to-dead", "--timeout", "0.5", *where)
    assert code == 3 and "ACTIVE CLUSTER NOT ANSWERING: to-dead: kafka-dead" in out
    code, _, _ = run(capsys, "status", "orders", "--timeout", "0.5", *where)
    assert code == 0, "another route, on clusters that answer"


def test_status_says_which_running_clients_disagree_with_the_stored_route(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = etcd_args(refcluster, namespace)
    center.switch("orders", "kafka-b")
    presence = {
        "in-step": {"client": "in-step", "role": "consumer", "cluster": "kafka-b", "epoch": 2, "state": "active"},
        "behind": {"client": "behind", "role": "producer", "cluster": "kafka-a", "epoch": 1, "state": "active"},
    }
    for client, doc in presence.items():
        center.store.put(center.keys.client("orders", client), json.dumps(doc).encode())
    center.store.put(center.keys.client("orders", "garbage"), b"[1, 2]")
    capsys.readouterr()  # what the setup logged
    code, out, err = run(capsys, "status", "orders", "--json", *where)
    assert code == 0 and "Traceback" not in err
    data = json.loads(out)
    assert [(d["client"], d["cluster"], d["epoch"]) for d in data["disagreeing_clients"]] == [("behind", "kafka-a", 1)]
    assert any(i["key"].endswith("/garbage") and "JSON object" in i["reason"] for i in data["invalid"])
    code, out, _ = run(capsys, "status", "orders", *where)
    assert code == 0 and "clients that disagree with the stored route" in out
    # Behind for longer than a switch takes (here: any time at all): exit status 4, naming it.
    code, out, _ = run(capsys, "status", "orders", "--json", "--switch-grace", "0", *where)
    health = json.loads(out)["health"]
    assert code == 4 and [c["client"] for c in health["clients_behind"]] == ["behind"], health
