"""Secrets in cluster definitions: which settings bear them, references only, resolution in the
client, and what output shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ValidationError
from hotstandby.logs import get_logger
from hotstandby.secret_refs import is_reference, is_secret_setting, literal_secrets, redact_value, resolve_refs
from tests.support import capture_logs

SECRET = "hunter2-KNOWN-SECRET"


@pytest.mark.parametrize(
    "name",
    ["sasl.password", "ssl.key.password", "ssl.key.pem", "ssl.certificate.pem", "sasl.oauthbearer.config",
     "sasl.jaas.config", "api_key", "auth_params", "token", "client.secret", "sasl.oauthbearer.client.secret"],
)  # fmt: skip
def test_secret_bearing_settings(name: str) -> None:
    assert is_secret_setting(name)


@pytest.mark.parametrize(
    "name",
    [
        "bootstrap.servers",
        "acks",
        "security.protocol",
        "linger.ms",
        "keepalive",
        "monkey",
        "ssl.key.location",
        "tls_private_key_file_path",
        "ssl.keystore.location",
    ],
)
def test_ordinary_settings(name: str) -> None:
    assert not is_secret_setting(name)


def test_only_whole_references_count_and_urls_with_a_password_are_secrets() -> None:
    assert is_reference("${env:KAFKA_PW}") and is_reference("${file:/run/secrets/pw}")
    assert not is_reference("pre-${env:X}") and not is_reference("${vault:x}") and not is_reference(5)
    settings = {"sasl.password": "${env:PW}", "ssl.key.password": SECRET, "acks": "all",
                "url": f"pulsar+ssl://svc:{SECRET}@host:6651"}  # fmt: skip
    assert literal_secrets(settings) == ["ssl.key.password", "url"]


def test_output_shows_references_and_hides_literals_and_url_passwords() -> None:
    assert redact_value("sasl.password", "${env:PW}") == "${env:PW}"
    assert redact_value("sasl.password", SECRET) == "***"
    assert redact_value("url", f"pulsar://svc:{SECRET}@h:6650/x") == "pulsar://svc:***@h:6650/x"
    assert redact_value("acks", "all") == "all"


def test_references_are_resolved_from_the_environment_and_files(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(SECRET + "\n")
    got = resolve_refs({"a": "${env:A}", "b": f"${{file:{tmp_path / 'pw'}}}", "c": 3}, {"A": "x"})
    assert got == {"a": "x", "b": SECRET, "c": 3}
    with pytest.raises(ValidationError, match="cannot read") as err:
        resolve_refs({"b": f"${{file:{tmp_path / 'none'}}}"}, {})
    assert err.value.key == "b"


def test_a_literal_secret_is_refused_in_etcd_unless_allowed_and_then_warned() -> None:
    center = ConfigCenter(MemoryStore(), "/s")
    literal = ClusterSpec(name="k", kind="kafka", url="127.0.0.1:9", client={"sasl.password": SECRET})
    with pytest.raises(ValidationError, match=r"sasl\.password") as err:
        center.put_cluster(literal)
    assert SECRET not in str(err.value) and center.clusters() == {}
    center.put_cluster(ClusterSpec(name="r", kind="kafka", url="127.0.0.1:9", client={"sasl.password": "${env:PW}"}))
    with capture_logs() as logs:
        center.put_cluster(literal, allow_literal=True)
    warned = [e for e in logs if e["event"] == "cluster.literal_secret"]
    assert warned and warned[0]["settings"] == ["sasl.password"] and SECRET not in repr(logs)
    assert set(center.clusters()) == {"k", "r"}


def test_logs_hide_secret_fields_and_url_passwords() -> None:
    with capture_logs() as logs:
        get_logger().info("x.happened", **{"oauthbearer_config": SECRET, "url": f"http://u:{SECRET}@h/"})
    assert SECRET not in repr(logs)


def test_a_cluster_definition_names_no_secret_in_its_repr_its_errors_or_its_endpoints() -> None:
    spec = ClusterSpec(name="p", kind="pulsar", url=f"pulsar://svc:{SECRET}@h1:6650,h2:6650",
                       client={"auth_params": SECRET, "tls_trust_certs_file_path": "/ca.pem"},
                       consumer={"token": "${env:PULSAR_TOKEN}"})  # fmt: skip
    assert repr(spec) == (
        "ClusterSpec(name='p', kind='pulsar', url='pulsar://svc:***@h1:6650,h2:6650', client={'auth_params': '***', "
        "'tls_trust_certs_file_path': '/ca.pem'}, producer={}, consumer={'token': '${env:PULSAR_TOKEN}'})"
    )
    assert spec.endpoints() == [("h1", 6650), ("h2", 6650)], "the brokers, not user:password@"
    with pytest.raises(ValidationError, match="service_url") as err:
        ClusterSpec.from_json("p", f'{{"kind": "pulsar", "service_url": "pulsar://svc:{SECRET}@h1"}}')
    assert SECRET not in str(err.value) and "pulsar://svc:***@h1" in str(err.value)
