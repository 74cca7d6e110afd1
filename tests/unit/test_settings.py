from __future__ import annotations

import pytest

from hotstandby.errors import ValidationError
from hotstandby.settings import Endpoint, Settings, parse_endpoints


def test_defaults_apply_when_nothing_is_set() -> None:
    s = Settings.resolve(environ={})
    assert s.etcd == (Endpoint("127.0.0.1", 2379),)
    assert s.namespace == "/hotstandby"
    assert s.etcd_timeout == 5.0


def test_environment_beats_defaults_and_arguments_beat_environment() -> None:
    env = {
        "HOTSTANDBY_ETCD": "10.0.0.1:2379,10.0.0.2:2379",
        "HOTSTANDBY_NAMESPACE": "/from-env",
        "HOTSTANDBY_ETCD_TIMEOUT": "2",
    }
    from_env = Settings.resolve(environ=env)
    assert [str(e) for e in from_env.etcd] == ["10.0.0.1:2379", "10.0.0.2:2379"]
    assert (from_env.namespace, from_env.etcd_timeout) == ("/from-env", 2.0)
    explicit = Settings.resolve(etcd="127.0.0.1:1", namespace="arg", etcd_timeout=0.5, environ=env)
    assert ([str(e) for e in explicit.etcd], explicit.namespace, explicit.etcd_timeout) == (
        ["127.0.0.1:1"],
        "/arg",
        0.5,
    )


def test_empty_environment_variable_counts_as_unset() -> None:
    assert Settings.resolve(environ={"HOTSTANDBY_NAMESPACE": ""}).namespace == "/hotstandby"


@pytest.mark.parametrize("text", ["", "host", "host:", ":2379", "host:99999", "host:abc"])
def test_bad_endpoints_name_the_setting(text: str) -> None:
    with pytest.raises(ValidationError, match="etcd"):
        parse_endpoints(text)


def test_endpoint_list_accepts_http_urls_and_ipv6() -> None:
    assert parse_endpoints(["http://a:1", "[::1]:2"]) == (Endpoint("a", 1), Endpoint("::1", 2))


@pytest.mark.parametrize("ns", ["/", "", "a//b"])
def test_bad_namespace_is_rejected(ns: str) -> None:
    with pytest.raises(ValidationError, match="namespace"):
        Settings.resolve(namespace=ns, environ={})


def test_bad_timeout_is_rejected() -> None:
    with pytest.raises(ValidationError, match="etcd_timeout"):
        Settings.resolve(environ={"HOTSTANDBY_ETCD_TIMEOUT": "soon"})
    with pytest.raises(ValidationError, match="positive"):
        Settings.resolve(etcd_timeout=0, environ={})


def test_settings_are_frozen() -> None:
    s = Settings.resolve(environ={})
    with pytest.raises(AttributeError):
        s.namespace = "/x"  # type: ignore[misc]
