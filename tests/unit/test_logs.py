from __future__ import annotations

from hotstandby.logs import REDACTED, redact_secrets


def test_secret_fields_are_redacted_even_nested() -> None:
    event = {
        "event": "cluster.stored",
        "password": "p",
        "config": {"sasl.password": "x", "bootstrap.servers": "h:1", "ssl.key.password": "y"},
        "items": [{"token": "t", "ok": 1}],
        "url": "h:1",
    }
    out = redact_secrets(None, "info", dict(event))
    assert out["password"] == REDACTED
    assert out["config"] == {"sasl.password": REDACTED, "bootstrap.servers": "h:1", "ssl.key.password": REDACTED}
    assert out["items"] == [{"token": REDACTED, "ok": 1}]
    assert out["url"] == "h:1" and out["event"] == "cluster.stored"
