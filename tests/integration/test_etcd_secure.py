"""The config center on an etcd with TLS and authentication (its own process here, on loopback):
who may connect, and a client that outlives its auth token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pyetcd
import pytest

from hotstandby.cli import main
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.etcd import EtcdStore
from hotstandby.configcenter.etcd_auth import EtcdAuthAdmin
from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import ConfigCenterError, ConfigCenterUnavailable
from hotstandby.refcluster import Ports
from hotstandby.refcluster.binaries import find_binaries
from hotstandby.refcluster.certs import LocalCA
from hotstandby.refcluster.processes import spawn, stop_pid, wait_ready
from hotstandby.settings import Settings

pytestmark = pytest.mark.integration

PASSWORD = "root-pw-for-tests"
TOKEN_TTL_S = 2


@dataclass(frozen=True)
class SecureEtcd:
    url: str  # https://127.0.0.1:PORT
    ca: Path


@pytest.fixture(scope="module")
def secure_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureEtcd]:
    """etcd with a server certificate from a local CA, a root user, auth enabled, and simple
    tokens that lapse after 2 idle seconds."""
    work = tmp_path_factory.mktemp("secure-etcd")
    ca = LocalCA(work / "tls")
    server = ca.issue("etcd-server", server=True)
    ports = Ports.free()
    client, peer = f"https://127.0.0.1:{ports.etcd}", f"http://127.0.0.1:{ports.etcd_peer}"
    argv = [find_binaries().etcd, "--name", "secure", "--data-dir", str(work / "data"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"secure={peer}", "--cert-file", str(server.cert), "--key-file", str(server.key),
            "--auth-token", "simple", "--auth-token-ttl", str(TOKEN_TTL_S),
            "--log-level", "warn", "--unsafe-no-fsync"]  # fmt: skip
    proc = spawn(argv, log_path=work / "etcd.log", cwd=work)
    try:
        plain_tls = Settings.resolve(etcd=client, etcd_ca=str(ca.cert_path), etcd_timeout=2, environ={})
        with ConfigCenter.open(plain_tls) as center:
            wait_ready("etcd", proc, center.clusters, timeout=60, log_path=work / "etcd.log",
                       retry_on=(ConfigCenterError,))  # fmt: skip
            assert isinstance(center.store, EtcdStore)
            admin = EtcdAuthAdmin(center.store)
            admin.add_user("root", PASSWORD)
            admin.grant_role("root", "root")
            admin.enable()
        yield SecureEtcd(client, ca.cert_path)
    finally:
        stop_pid(proc.pid, argv)


def settings(etcd: SecureEtcd, **given: str) -> Settings:
    return Settings.resolve(etcd=etcd.url, etcd_ca=str(etcd.ca), etcd_timeout=3, environ={}, **given)  # type: ignore[arg-type]


def test_a_client_with_the_ca_and_credentials_reads_and_writes(secure_etcd: SecureEtcd) -> None:
    with ConfigCenter.open(settings(secure_etcd, etcd_user="root", etcd_password=PASSWORD)) as center:
        center.store.put("/t/a", b"1")
        got = center.store.get("/t/a")
        assert got is not None and got.value == b"1"


@pytest.mark.parametrize(
    ("given", "error", "text"),
    [
        ({}, ConfigCenterError, "user name is empty"),  # TLS, no credentials
        ({"etcd_user": "root", "etcd_password": "wrong"}, ConfigCenterError, "authentication failed"),
    ],
)
def test_who_may_not_connect_gets_a_clear_error(
    secure_etcd: SecureEtcd, given: dict[str, str], error: type[Exception], text: str
) -> None:
    with ConfigCenter.open(settings(secure_etcd, **given)) as center, pytest.raises(error, match=text) as err:
        center.store.get("/t/a")
    assert PASSWORD not in str(err.value)


def test_a_plaintext_client_of_a_tls_etcd_finds_it_unavailable(secure_etcd: SecureEtcd) -> None:
    plain = Settings.resolve(etcd=secure_etcd.url.replace("https://", ""), etcd_timeout=2, environ={})
    with ConfigCenter.open(plain) as center, pytest.raises(ConfigCenterUnavailable):
        center.store.get("/t/a")


def test_a_client_idle_longer_than_its_token_lives_goes_on(secure_etcd: SecureEtcd) -> None:
    with ConfigCenter.open(settings(secure_etcd, etcd_user="root", etcd_password=PASSWORD)) as center:
        center.store.put("/t/b", b"1")  # authenticated now
        # Using a token keeps it alive, so each look uses another witness, authenticated now too.
        port = int(secure_etcd.url.rsplit(":", 1)[1])
        creds = grpc.ssl_channel_credentials(secure_etcd.ca.read_bytes())
        witnesses = [pyetcd.MultiEndpointEtcd3Client(endpoints=[pyetcd.Endpoint("127.0.0.1", port, secure=True,
                                                                                creds=creds)],
                                                     timeout=3, user="root", password=PASSWORD)
                     for _ in range(4 * TOKEN_TTL_S * 2)]  # fmt: skip

        def lapsed() -> bool:
            witness = witnesses.pop()
            try:
                witness.get("/t/b")
                return False
            except grpc.RpcError as exc:
                return "invalid auth token" in str(exc.details())
            finally:
                witness.close()

        assert wait_until(lapsed, TOKEN_TTL_S * 3.5, first=0.5, most=0.5), "the tokens never lapsed"
        for witness in witnesses:
            witness.close()
        got = center.store.get("/t/b")  # our token lapsed as well: renewed
        assert got is not None and got.value == b"1"


def test_roles_let_an_application_read_and_keep_its_books_but_not_flip_or_define(
    secure_etcd: SecureEtcd, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = "/hs-roles"
    monkeypatch.setenv("HOTSTANDBY_ETCD_PASSWORD", PASSWORD)
    code = main(["setup-roles", "--etcd", secure_etcd.url, "--etcd-ca", str(secure_etcd.ca), "--etcd-user", "root",
                 "--namespace", namespace, "--json"])  # fmt: skip
    assert code == 0
    roles = {r["role"] for r in json.loads(capsys.readouterr().out)["roles"]}
    assert roles == {f"hotstandby-{r}@{namespace}" for r in ("app", "replicator", "sre", "admin")}
    monkeypatch.delenv("HOTSTANDBY_ETCD_PASSWORD")
    root = replace(settings(secure_etcd, etcd_user="root", etcd_password=PASSWORD), namespace=namespace)
    with ConfigCenter.open(root) as center:
        assert isinstance(center.store, EtcdStore)
        admin = EtcdAuthAdmin(center.store)
        for user in ("app", "sre"):
            admin.add_user(user, f"{user}-pw")
            admin.grant_role(user, f"hotstandby-{user}@{namespace}")
        for name in ("kafka-a", "kafka-b"):
            center.put_cluster(ClusterSpec(name=name, kind="kafka", url="127.0.0.1:9"))
        center.create_route("orders", ["kafka-a", "kafka-b"], "kafka-a")

    def as_user(user: str) -> Settings:
        return replace(settings(secure_etcd, etcd_user=user, etcd_password=f"{user}-pw"), namespace=namespace)

    with ConfigCenter.open(as_user("app")) as app:
        assert app.route("orders").active == "kafka-a"
        app.store.put(app.keys.ledger("g", "orders", 0), b"{}")  # its own books
        with pytest.raises(ConfigCenterError, match="permission denied"):
            app.switch("orders", "kafka-b", reason="an application must not")
        with pytest.raises(ConfigCenterError, match="permission denied"):
            app.put_cluster(ClusterSpec(name="evil", kind="kafka", url="127.0.0.1:9"))
    with ConfigCenter.open(as_user("sre")) as sre:
        flipped = sre.switch("orders", "kafka-b", reason="planned", by="somebody-else")
        assert (flipped.active, flipped.by) == ("kafka-b", "sre"), "by: the authenticated etcd user"
        with pytest.raises(ConfigCenterError, match="permission denied"):
            sre.put_cluster(ClusterSpec(name="evil", kind="kafka", url="127.0.0.1:9"))
