"""The operator CLI against the reference etcd."""

from __future__ import annotations

import json
import time

import pytest

from hotstandby.cli import main
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import Ports, RefCluster
from tests.integration.conftest import etcd_args


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


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
