"""The reference etcd's members: names, ports and command lines (no process started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotstandby.errors import ValidationError
from hotstandby.refcluster import Ports, RefCluster
from hotstandby.refcluster.etcd_access import EtcdAccess
from hotstandby.refcluster.etcd_members import client_ports, member_argv, member_names, port_names
from hotstandby.settings import parse_endpoints


def test_one_or_three_members_and_no_other_count() -> None:
    assert member_names(1) == ("etcd",)
    assert member_names(3) == ("etcd", "etcd-2", "etcd-3")
    assert port_names(3) == ("etcd", "etcd-peer", "etcd-2", "etcd-2-peer", "etcd-3", "etcd-3-peer")
    for count in (0, 2, 5):
        with pytest.raises(ValidationError, match="1 or 3"):
            member_names(count)
    with pytest.raises(ValidationError, match="1 or 3"):
        RefCluster("/nonexistent", etcd_members=2)


def test_three_members_form_one_cluster_of_their_peer_ports(tmp_path: Path) -> None:
    ports = Ports(etcd=1001, etcd_peer=1002, etcd_2=2001, etcd_2_peer=2002, etcd_3=3001, etcd_3_peer=3002)
    access = EtcdAccess(tmp_path, client_ports(ports, 3), secure=False)
    argvs = {name: member_argv(name, 3, ports, tmp_path, access) for name in member_names(3)}
    cluster = "etcd=http://127.0.0.1:1002,etcd-2=http://127.0.0.1:2002,etcd-3=http://127.0.0.1:3002"
    for name, argv in argvs.items():
        opts = dict(zip(argv[1::2], argv[2::2], strict=False))
        assert opts["--initial-cluster"] == cluster
        assert opts["--name"] == name and opts["--data-dir"] == str(tmp_path / f"{name}-data")
    second = dict(zip(argvs["etcd-2"][1::2], argvs["etcd-2"][2::2], strict=False))
    assert second["--listen-client-urls"] == "http://127.0.0.1:2001"
    assert second["--listen-peer-urls"] == "http://127.0.0.1:2002"


def test_clients_are_given_every_member(tmp_path: Path) -> None:
    access = EtcdAccess(tmp_path, (1001, 2001, 3001), secure=False)
    assert [str(e) for e in parse_endpoints(access.url)] == ["127.0.0.1:1001", "127.0.0.1:2001", "127.0.0.1:3001"]
    assert access.client_config()["hotstandby.etcd"] == access.url
    secure = EtcdAccess(tmp_path, (1001, 2001), secure=True)
    assert secure.url == "https://127.0.0.1:1001,https://127.0.0.1:2001"
