"""A Pulsar cluster definition's client settings as pulsar.Client's arguments: which
Authentication class, secrets resolved from the environment or a file, TLS settings typed, and
errors that name the cluster and the setting, never the secret."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar.client.settings import PulsarAuth, auth_for, client_kwargs, definition_kwargs
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.errors import ConfigError, ValidationError
from tests.support import capture_logs

SECRET = "eyJ-KNOWN-SECRET-token"


def _spec(name: str = "pulsar-b", **client: Any) -> ClusterSpec:
    return ClusterSpec(name=name, kind="pulsar", url="pulsar+ssl://broker-b:6651", client=client)


@pytest.fixture(autouse=True)
def _token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULSAR_TOKEN", SECRET)


@pytest.mark.parametrize(
    ("plugin", "params", "factory", "cls"),
    [
        ("token", SECRET, "AuthenticationToken", pulsar.AuthenticationToken),
        ("Token", f"token:{SECRET}", "AuthenticationToken", pulsar.AuthenticationToken),
        ("basic", '{"username": "u", "password": "p"}', "AuthenticationBasic", pulsar.AuthenticationBasic),
        ("oauth2", '{"issuer_url": "https://idp", "private_key": "/k.json"}', "AuthenticationOauth2",
         pulsar.AuthenticationOauth2),
        ("tls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", "Authentication", pulsar.Authentication),
        ("org.apache.pulsar.client.impl.auth.AuthenticationToken", f"token:{SECRET}", "Authentication",
         pulsar.Authentication),
    ],
)  # fmt: skip
def test_each_plugin_makes_its_pulsar_client_class(plugin: str, params: str, factory: str, cls: type) -> None:
    auth = auth_for("pulsar-b", {"auth_plugin": plugin, "auth_params": params})
    assert auth is not None and auth.factory == factory
    built = auth.build()
    assert type(built) is cls and built.auth is not None


def test_a_token_is_resolved_from_the_environment_or_a_file_and_its_prefix_dropped(tmp_path: Path) -> None:
    kwargs, auth = definition_kwargs(_spec(auth_plugin="token", auth_params="${env:PULSAR_TOKEN}"))
    assert kwargs == {} and auth == PulsarAuth("pulsar-b", "token", "AuthenticationToken", (SECRET,))
    (tmp_path / "token").write_text(f"token:{SECRET}\n")
    _, from_file = definition_kwargs(_spec(auth_plugin="token", auth_params=f"${{file:{tmp_path / 'token'}}}"))
    assert from_file is not None and from_file.args == (SECRET,)


def test_tls_authentication_takes_the_certificate_and_key_settings() -> None:
    spec = _spec(auth_plugin="tls", tls_certificate_file_path="/etc/pulsar/client.pem",
                 tls_private_key_file_path="${env:KEY_PATH}", tls_trust_certs_file_path="/etc/pulsar/ca.pem")  # fmt: skip
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KEY_PATH", "/etc/pulsar/client.key")
        kwargs, auth = definition_kwargs(spec)
    assert auth == PulsarAuth(
        "pulsar-b", "tls", "AuthenticationTLS", ("/etc/pulsar/client.pem", "/etc/pulsar/client.key")
    )
    assert kwargs["tls_private_key_file_path"] == "/etc/pulsar/client.key"
    with pytest.raises(ConfigError, match="tls needs auth_params or both tls_certificate_file_path"):
        auth_for("pulsar-b", {"auth_plugin": "tls"})


def test_settings_written_as_text_get_pulsar_clients_types() -> None:
    spec = _spec(tls_trust_certs_file_path="/ca.pem", tls_allow_insecure_connection="false",
                 tls_validate_hostname="true", operation_timeout_seconds="10", connection_timeout_ms=5000)  # fmt: skip
    assert client_kwargs(spec, {}) == {
        "tls_trust_certs_file_path": "/ca.pem",
        "tls_allow_insecure_connection": False,
        "tls_validate_hostname": True,
        "operation_timeout_seconds": 10,
        "connection_timeout_ms": 5000,
    }
    with pytest.raises(ConfigError, match="'io_threads' must be a whole number"):
        client_kwargs(_spec(io_threads="many"), {})
    with pytest.raises(ConfigError, match=r"'tls_trust_cert': not an argument of pulsar\.Client"):
        client_kwargs(_spec(tls_trust_cert="/ca.pem"), {})
    with pytest.raises(ConfigError, match="'authentication': use auth_plugin and auth_params"):
        client_kwargs(_spec(authentication="token"), {})


def test_the_definitions_credentials_win_and_the_applications_serve_clusters_without() -> None:
    mine = pulsar.AuthenticationToken("the-applications-token")
    with capture_logs() as logs:
        kwargs = client_kwargs(_spec(auth_plugin="token", auth_params="${env:PULSAR_TOKEN}"),
                               {"authentication": mine, "operation_timeout_seconds": 3})  # fmt: skip
    assert isinstance(kwargs["authentication"], pulsar.AuthenticationToken) and kwargs["authentication"] is not mine
    assert kwargs["operation_timeout_seconds"] == 3
    assert [(e["event"], e["cluster"], e["plugin"]) for e in logs] == [
        ("client.auth_from_definition", "pulsar-b", "token")
    ]
    assert client_kwargs(_spec(operation_timeout_seconds=30), {"authentication": mine}) == {
        "operation_timeout_seconds": 30,
        "authentication": mine,
    }


def test_errors_name_the_cluster_and_setting_and_never_the_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ValidationError, match="environment variable PULSAR_B_TOKEN is not set") as missing:
        client_kwargs(_spec(auth_plugin="token", auth_params="${env:PULSAR_B_TOKEN}"), {})
    assert missing.value.key == "clusters/pulsar-b" and "auth_params" in str(missing.value)
    with pytest.raises(ConfigError, match=r"unknown auth_plugin 'kerberos'.*short names: token, tls") as unknown:
        client_kwargs(_spec(auth_plugin="kerberos", auth_params="${env:PULSAR_TOKEN}"), {})
    with pytest.raises(ConfigError, match="cluster 'pulsar-b': auth_params are not what") as refused:
        client_kwargs(_spec(auth_plugin="basic", auth_params="${env:PULSAR_TOKEN}"), {})
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    with pytest.raises(ConfigError, match="auth_params without auth_plugin") as alone:
        client_kwargs(_spec(auth_params="${env:PULSAR_TOKEN}"), {})
    with pytest.raises(ConfigError, match="'token' needs auth_params"):
        client_kwargs(_spec(auth_plugin="token"), {})
    for err in (missing, unknown, refused, alone):
        assert SECRET not in str(err.value) and SECRET not in repr(err.value)
    assert SECRET not in caplog.text


def test_the_resolved_secret_is_in_no_repr() -> None:
    settings, auth = definition_kwargs(_spec(auth_plugin="token", auth_params="${env:PULSAR_TOKEN}"))
    assert auth is not None and SECRET in auth.args
    assert SECRET not in repr(auth) and SECRET not in repr(settings) and SECRET not in repr(auth.build())
    assert SECRET not in repr(client_kwargs(_spec(auth_plugin="token", auth_params="${env:PULSAR_TOKEN}"), {}))


def test_auth_params_must_be_a_reference_in_the_config_center() -> None:
    center = ConfigCenter(MemoryStore(), "/s")
    with pytest.raises(ValidationError, match="auth_params: a secret must be a reference") as err:
        center.put_cluster(_spec(auth_plugin="token", auth_params=SECRET))
    assert SECRET not in str(err.value)
    center.put_cluster(_spec(auth_plugin="token", auth_params="${env:PULSAR_B_TOKEN}"))
    assert center.cluster("pulsar-b").client["auth_params"] == "${env:PULSAR_B_TOKEN}"
