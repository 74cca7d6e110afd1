"""One reference cluster per test session, on free loopback ports, always torn down."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import Ports, RefCluster


@pytest.fixture(scope="session")
def brokers(request: pytest.FixtureRequest) -> str:
    """The reference cluster's flavour this run tests: ``lite`` or ``apache`` (``--brokers``)."""
    return str(request.config.getoption("--brokers"))


@pytest.fixture(scope="session")
def refcluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, brokers: str
) -> Iterator[RefCluster]:
    running = request.config.getoption("--refcluster-dir")
    if running:
        rc = RefCluster(running)
        if not rc.is_up() or rc.brokers != brokers:
            pytest.exit(f"--refcluster-dir: no {brokers} reference cluster is up in {running}", returncode=4)
        yield rc
        return
    tuning = request.config.getoption("--settings")
    asked = {kind: request.config.getoption(f"--{kind}-version") for kind in ("kafka", "pulsar")}
    versions = {kind: version for kind, version in asked.items() if version}
    rc = RefCluster(tmp_path_factory.mktemp("refcluster"), Ports.free(), brokers=brokers, tuning=tuning,
                    versions=versions)  # fmt: skip
    try:
        rc.up()
        yield rc
    finally:
        rc.down()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session (two cores, loopback only) for every Spark test; its JVM is
    stopped by PID afterwards."""
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    from hotstandby.spark_integration.local_session import local_session

    session = local_session("hotstandby-tests", **{"spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            proc = getattr(gateway, "proc", None)
            if proc is not None:
                proc.terminate()
                proc.wait(30)
            SparkContext._gateway = None
            SparkContext._jvm = None


@pytest.fixture
def namespace() -> str:
    return f"/hs-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def center(refcluster: RefCluster, namespace: str) -> Iterator[ConfigCenter]:
    """A config center on the reference etcd, in a fresh namespace with the four clusters and two routes."""
    refcluster.register(namespace)
    with ConfigCenter.open(replace(refcluster.settings(), namespace=namespace)) as c:
        yield c


def etcd_args(rc: RefCluster, namespace: str) -> list[str]:
    return ["--etcd", f"127.0.0.1:{rc.ports.etcd}", "--namespace", namespace]


def listening_addresses(pid: int) -> list[str]:
    """``ip:port`` of every TCP socket process ``pid`` listens on (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                ip_hex, port_hex = cols[1].split(":")
                if width == 8:
                    ip = ".".join(str(int(ip_hex[i : i + 2], 16)) for i in (6, 4, 2, 0))
                elif ip_hex.startswith("0000000000000000FFFF0000"):  # IPv4-mapped (a JVM's sockets)
                    ip = ".".join(str(int(ip_hex[i : i + 2], 16)) for i in (30, 28, 26, 24))
                else:
                    ip = "::1" if ip_hex == "00000000000000000000000001000000" else ip_hex
                found.append(f"{ip}:{int(port_hex, 16)}")
    return found
