"""HOTSTANDBY_LOG_LEVEL: the SDK's events on stderr in processes the application does not set
up itself (Spark's Python workers), and nothing when it is not set."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from hotstandby import logs


@pytest.fixture(autouse=True)
def unconfigured() -> Iterator[None]:
    logs.reset()
    yield
    logs.reset()


def test_nothing_is_configured_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logs.LEVEL_ENV, raising=False)
    assert logs.configure_from_env() is False
    assert logging.getLogger("hotstandby").level == logging.NOTSET


def test_the_level_named_prints_events_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(logs.LEVEL_ENV, " INFO ")
    assert logs.configure_from_env() is True
    logs.get_logger("hotstandby.spark").info("spark.switched", to="kafka-b")
    logs.get_logger("hotstandby.spark").debug("spark.planned", batch=3)
    err = capsys.readouterr().err
    assert "spark.switched" in err and "to=kafka-b" in err
    assert "spark.planned" not in err
    assert logs.configure_from_env() is False, "configured once: a second import changes nothing"


def test_an_unknown_level_prints_warnings_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(logs.LEVEL_ENV, "loud")
    assert logs.configure_from_env() is True
    assert logging.getLogger("hotstandby").level == logging.WARNING
    err = capsys.readouterr().err
    assert "logs.unknown_level" in err and "value=loud" in err
