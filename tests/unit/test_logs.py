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


def test_configured_logging_follows_a_replaced_stderr(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import io
    import sys

    from hotstandby.logs import configure, get_logger

    configure("info", json=True)
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    get_logger().info("one.event", password="p")
    first.close()  # as pytest closes a test's capture
    monkeypatch.setattr(sys, "stderr", second)
    get_logger().info("two.event")
    assert '"event": "two.event"' in second.getvalue()


def test_configured_logging_redacts(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import io
    import sys

    from hotstandby.logs import configure, get_logger

    configure("info", json=True)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    get_logger().info("cluster.stored", client={"sasl.password": "hunter2"})
    assert "hunter2" not in out.getvalue() and REDACTED in out.getvalue()
