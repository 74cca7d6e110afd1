"""The seam between the core and the messaging systems: the core asks the adapter for what
differs, so a system registered in the registry needs no change in the core, and the core holds
no Kafka or Pulsar branch."""

from __future__ import annotations

import ast
import json
import pathlib
import sys
import textwrap
from collections.abc import Iterator

import pytest

from hotstandby import registry
from hotstandby.adapter import Adapter, load_adapter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError, ValidationError
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.partitioner import KEYED
from hotstandby.failover.probe import probe_cluster, tls_context

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A messaging system the core has never heard of: addressed as "fake://host:port", TLS when the
# URL says "fakes://", its client setting "fake.url" naming a cluster.
FAKE_ADAPTER = textwrap.dedent(
    """
    from hotstandby.adapter import TlsSettings, flag, host_ports

    class FakeAdapter:
        kind = "fakemq"
        url_field = "fake.url"
        url_form = "fake://host:port"
        cluster_keys = ("fake.url",)
        default_partitioner = "crc32"
        identity_key = "hs-id"
        probed = []

        def endpoints(self, url):
            scheme, sep, rest = url.partition("://")
            if scheme not in ("fake", "fakes") or not sep:
                raise ValueError("not fake://")
            return host_ports(rest)

        def uses_tls(self, url, client):
            return url.startswith("fakes://")

        def tls_settings(self, client):
            return TlsSettings(cafile=None, verify=not flag(client.get("fake.insecure", False)), check_hostname=False)

        def probe(self, host, port, timeout, *, tls=None):
            self.probed.append((host, port, tls is not None))
            return f"fake protocol at {host}:{port}"

        def encode_identity(self, rid):
            return rid.encode()

        def decode_identity(self, raw):
            raise NotImplementedError

        def clients(self):
            return {}

    ADAPTER = FakeAdapter()
    """
)


@pytest.fixture
def fake_system(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Adapter]:
    package = tmp_path / "fakemq_adapter"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "adapter.py").write_text(FAKE_ADAPTER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry._ADAPTERS, "fakemq", registry.AdapterInfo("fakemq", "fakemq_adapter", "", "", "", ""))
    yield load_adapter("fakemq")
    for name in ("fakemq_adapter", "fakemq_adapter.adapter"):
        sys.modules.pop(name, None)


def test_a_registered_system_is_addressed_by_its_adapter(fake_system: Adapter) -> None:
    assert "fakemq" in registry.kinds()
    spec = ClusterSpec.from_json("f1", json.dumps({"kind": "fakemq", "fake.url": "fake://h1:7,h2:8"}))
    assert spec.endpoints() == [("h1", 7), ("h2", 8)]
    assert json.loads(spec.to_json())["fake.url"] == "fake://h1:7,h2:8"
    assert not spec.uses_tls
    with pytest.raises(ValidationError, match=r"'fake\.url' is required"):
        ClusterSpec.from_json("f1", json.dumps({"kind": "fakemq", "bootstrap.servers": "h:1"}))
    with pytest.raises(ValidationError, match=r"fake\.url must be fake://host:port"):
        ClusterSpec.from_json("f1", json.dumps({"kind": "fakemq", "fake.url": "h:1"}))


def test_the_probe_and_tls_are_the_adapters(fake_system: Adapter) -> None:
    plain = ClusterSpec(name="f1", kind="fakemq", url="fake://127.0.0.1:7")
    result = probe_cluster(plain, timeout=1.0)
    assert (result.ok, result.detail) == (True, "fake protocol at 127.0.0.1:7")
    secure = ClusterSpec(name="f2", kind="fakemq", url="fakes://127.0.0.1:8", client={"fake.insecure": "true"})
    context = tls_context(secure)
    assert context is not None and not context.check_hostname and context.verify_mode == 0  # ssl.CERT_NONE
    assert probe_cluster(secure, timeout=1.0).detail == "fake protocol at 127.0.0.1:8, TLS"
    assert fake_system.probed == [("127.0.0.1", 7, False), ("127.0.0.1", 8, True)]  # type: ignore[attr-defined]


def test_a_setting_that_names_a_cluster_is_refused_for_any_system(fake_system: Adapter) -> None:
    with pytest.raises(ConfigError, match=r"'fake\.url' must not be set"):
        ClientOptions.split({"hotstandby.route": "r", "fake.url": "fake://h:1"}, role="producer")
    for kind in ("kafka", "pulsar"):
        for key in load_adapter(kind).cluster_keys:
            with pytest.raises(ConfigError, match="comes from route"):
                ClientOptions.split({"hotstandby.route": "r", key: "x"}, role="producer")


@pytest.mark.parametrize(("kind", "partitioner"), [("kafka", "murmur2"), ("pulsar", "java-string")])
def test_each_system_names_its_clients_default_partitioner(kind: str, partitioner: str) -> None:
    assert load_adapter(kind).default_partitioner == partitioner
    assert partitioner in KEYED


def test_an_unknown_kind_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="'kind' must be one of") as refused:
        ClusterSpec.from_json("x", json.dumps({"kind": "rabbit", "url": "x"}))
    assert {"kafka", "pulsar"} <= set(registry.kinds())
    assert all(kind in str(refused.value) for kind in registry.kinds())


# The core and the reference cluster's driver: no string that names Kafka or Pulsar, except in
# documentation (docstrings) — what differs is asked of the adapter or the system's module.
NEUTRAL = sorted(
    [
        *(ROOT / "hotstandby" / "configcenter").glob("*.py"),
        *(ROOT / "hotstandby" / "failover").rglob("*.py"),
        ROOT / "hotstandby" / "adapter.py",
        ROOT / "hotstandby" / "refcluster" / "cluster.py",
    ]
)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize("path", NEUTRAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_has_no_kafka_or_pulsar_branch(path: pathlib.Path) -> None:
    named = [
        f"line {line}: {text!r}"
        for line, text in _strings(ast.parse(path.read_text()))
        if "kafka" in text.lower() or "pulsar" in text.lower()
    ]
    assert not named, "\n".join(named)
