"""etcd TLS and credentials in the settings: precedence, pairs that belong together, no secret shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotstandby.errors import ConfigError, ValidationError
from hotstandby.etcd_security import EtcdSecurity
from hotstandby.settings import PLAINTEXT, Settings


def test_plaintext_without_anything() -> None:
    assert Settings.resolve(environ={}).etcd_security == PLAINTEXT
    assert PLAINTEXT.channel_credentials() is None


def test_https_endpoints_ask_for_tls_and_mixing_schemes_is_refused() -> None:
    settings = Settings.resolve(etcd="https://e1:2379,https://e2:2379", environ={})
    assert settings.etcd_security.tls and [str(e) for e in settings.etcd] == ["e1:2379", "e2:2379"]
    with pytest.raises(ValidationError, match="https"):
        Settings.resolve(etcd="https://e1:2379,e2:2379", environ={})


def test_environment_and_explicit_arguments_follow_the_precedence_rule(tmp_path: Path) -> None:
    env = {"HOTSTANDBY_ETCD_CA": "/env/ca.pem", "HOTSTANDBY_ETCD_USER": "app", "HOTSTANDBY_ETCD_PASSWORD": "from-env"}
    from_env = Settings.resolve(environ=env).etcd_security
    assert (from_env.tls, from_env.ca, from_env.user, from_env.password) == (True, "/env/ca.pem", "app", "from-env")
    explicit = Settings.resolve(etcd_ca="/arg/ca.pem", etcd_user="sre", etcd_password="from-arg", environ=env)
    assert (explicit.etcd_security.ca, explicit.etcd_security.user) == ("/arg/ca.pem", "sre")
    assert explicit.etcd_security.password == "from-arg"


def test_a_password_file_is_read_without_its_line_end(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    env = {"HOTSTANDBY_ETCD_USER": "app", "HOTSTANDBY_ETCD_PASSWORD_FILE": str(secret)}
    assert EtcdSecurity.resolve(environ=env).password == "s3cret"
    with pytest.raises(ConfigError, match="cannot read") as err:
        EtcdSecurity.resolve(user="app", password_file=str(tmp_path / "missing"), environ={})
    assert str(tmp_path / "missing") in str(err.value)


@pytest.mark.parametrize(
    ("given", "key"),
    [
        ({"cert": "/c.pem"}, "etcd.cert"),
        ({"key": "/k.pem"}, "etcd.cert"),
        ({"user": "app"}, "etcd.user"),
        ({"password": "pw"}, "etcd.user"),
    ],
)
def test_halves_of_a_pair_are_refused(given: dict[str, str], key: str) -> None:
    with pytest.raises(ValidationError) as err:
        EtcdSecurity.resolve(environ={}, **given)
    assert err.value.key == key


def test_the_password_is_never_in_a_repr() -> None:
    security = EtcdSecurity.resolve(user="app", password="hunter2-very-secret", environ={})
    settings = Settings.resolve(etcd_user="app", etcd_password="hunter2-very-secret", environ={})
    assert "hunter2" not in repr(security) and "hunter2" not in repr(settings) and "user='app'" in repr(security)


def test_tls_reads_the_pem_files_when_connecting(tmp_path: Path) -> None:
    security = EtcdSecurity.resolve(ca=str(tmp_path / "absent-ca.pem"), environ={})
    with pytest.raises(ConfigError, match=r"absent-ca\.pem"):
        security.channel_credentials()


def test_client_and_spark_options_carry_tls_and_credentials() -> None:
    from hotstandby.failover.client_options import ClientOptions
    from hotstandby.spark_integration.source.options import parse_options

    config = {"hotstandby.route": "orders", "hotstandby.etcd": "https://e1:2379", "hotstandby.etcd.ca": "/ca.pem",
              "hotstandby.etcd.user": "app", "hotstandby.etcd.password": "pw"}  # fmt: skip
    options, rest = ClientOptions.split({**config, "acks": "all"}, role="producer")
    assert rest == {"acks": "all"}
    security = options.settings.etcd_security
    assert (security.tls, security.ca, security.user, security.password) == (True, "/ca.pem", "app", "pw")
    spark = parse_options({**config, "subscribe": "orders", "HotStandby.Etcd.User": "app"}, streaming=False)
    assert spark.settings.etcd_security == security
