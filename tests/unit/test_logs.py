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


def test_unconfigured_logging_prints_nothing(capfd) -> None:  # type: ignore[no-untyped-def]
    from hotstandby.logs import get_logger

    log = get_logger("hotstandby.test")
    log.debug("record.filtered", topic="t", offset=1)
    log.info("client.started", client="c")
    log.warning("switch.failed", error="boom")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_events_are_stdlib_records_under_hotstandby_names_with_their_fields() -> None:
    import logging

    from hotstandby.logs import get_logger

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler, logger = Keep(), logging.getLogger("hotstandby")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        get_logger("hotstandby.switch").info("switch.started", client="c", to="b", password="p")
        get_logger("hotstandby.ledger").debug("ledger.flushed", records=3)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert [(r.name, r.levelname) for r in records] == [("hotstandby.switch", "INFO"), ("hotstandby.ledger", "DEBUG")]
    assert dict(records[0].msg) == {"event": "switch.started", "client": "c", "to": "b", "password": REDACTED}  # type: ignore[call-overload]
    assert records[1].getMessage() == "ledger.flushed records=3"


def test_seldom_logs_an_event_at_its_1st_10th_and_100th_occurrence() -> None:
    from hotstandby.logs import Seldom, get_logger
    from tests.support import capture_logs

    seldom = Seldom(get_logger("hotstandby.test"))
    with capture_logs() as logs:
        for i in range(150):
            seldom.info("thing.happened", n=i)
        seldom.info("other.thing")
    assert [(e["event"], e["count"]) for e in logs] == [
        ("thing.happened", 1), ("thing.happened", 10), ("thing.happened", 100), ("other.thing", 1),
    ]  # fmt: skip
