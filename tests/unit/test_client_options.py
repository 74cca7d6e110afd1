from __future__ import annotations

import pytest

from hotstandby.errors import ConfigError, ValidationError
from hotstandby.failover.client_options import ClientOptions


def test_split_keeps_client_settings_untouched() -> None:
    opts, rest = ClientOptions.split(
        {"hotstandby.route": "orders", "hotstandby.etcd": "127.0.0.1:1", "acks": "all", "linger.ms": 5,
         "hotstandby.replay.window.ms": "1000"},
        role="producer",
    )  # fmt: skip
    assert rest == {"acks": "all", "linger.ms": 5}
    assert (opts.route, str(opts.settings.etcd[0]), opts.replay_window_ms) == ("orders", "127.0.0.1:1", 1000)
    assert opts.client_id.startswith("producer-")


def test_the_etcd_timeout_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOTSTANDBY_ETCD_TIMEOUT", "7")
    opts, _ = ClientOptions.split({"hotstandby.route": "r", "hotstandby.etcd.timeout.ms": 30_000}, role="p")
    assert opts.settings.etcd_timeout == 30.0
    assert ClientOptions.split({"hotstandby.route": "r"}, role="p")[0].settings.etcd_timeout == 7.0


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        ({}, ValidationError, "hotstandby.route"),
        ({"hotstandby.route": "r", "bootstrap.servers": "h:1"}, ConfigError, "comes from route 'r'"),
        ({"hotstandby.route": "r", "hotstandby.replay.window": 5}, ValidationError, "unknown setting"),
        ({"hotstandby.route": "r", "hotstandby.drain.timeout.ms": "soon"}, ValidationError, "integer"),
        ({"hotstandby.route": "r", "hotstandby.replay.window.bytes": -1}, ValidationError, "negative"),
        ({"hotstandby.route": "r", "hotstandby.etcd.timeout.ms": 0}, ValidationError, "positive"),
    ],
)
def test_bad_options_are_refused(config: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ClientOptions.split(config, role="producer")
