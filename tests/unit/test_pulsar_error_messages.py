"""The blocking creations' answers (adapters/pulsar/client/error_messages.py): the exception class and
text of a failed one, the timeout, and what comes after the caller gave up."""

from __future__ import annotations

import threading

import _pulsar
import pulsar
import pytest

from hotstandby.adapters.pulsar.client.error_messages import MessagedCalls, message_of


class _Error:
    """As ``_pulsar.Error`` reads (it cannot be made from Python)."""

    def __init__(self, result: pulsar.Result, message: str) -> None:
        self.error, self.message = result, message


class _Made:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close_async(self, callback: object) -> None:
        self.closed.set()


class _Inner:
    """A ``_pulsar.Client`` whose ``_v2`` calls answer with ``answer`` (or not at all)."""

    def __init__(self, answer: object | None) -> None:
        self.answer = answer
        self.callbacks: list[object] = []

    def create_producer_async_v2(self, topic: str, conf: object, callback: object) -> None:
        self.callbacks.append(callback)
        if self.answer is not None:
            callback(self.answer)  # type: ignore[operator]

    def get_schema_info(self, topic: str) -> str:
        return f"schema of {topic}"


def test_a_failure_raises_the_blocking_class_with_the_message_in_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pulsar, "Error", _Error)
    calls = MessagedCalls(_Inner(_Error(pulsar.Result.AuthenticationError, "supplier said no")), 1)
    with pytest.raises(pulsar.AuthenticationError) as failed:
        calls.create_producer("t", object())
    assert str(failed.value) == "Pulsar error: AuthenticationError: supplier said no"
    assert message_of(failed.value) == "supplier said no"


def test_a_failure_without_a_message_reads_as_pulsar_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pulsar, "Error", _Error)
    calls = MessagedCalls(_Inner(_Error(pulsar.Result.TopicNotFound, "")), 1)
    with pytest.raises(pulsar.TopicNotFound, match=r"^Pulsar error: TopicNotFound$") as failed:
        calls.create_producer("t", object())
    assert message_of(failed.value) is None


def test_an_answer_after_the_timeout_is_closed_and_the_caller_got_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hotstandby.adapters.pulsar.client.error_messages._LATE_MARGIN_S", 0.05)
    inner = _Inner(None)
    calls = MessagedCalls(inner, 0)
    with pytest.raises(pulsar.Timeout):
        calls.create_producer("t", object())
    late = _Made()
    inner.callbacks[0](late)  # type: ignore[operator]
    assert late.closed.is_set()


def test_a_success_is_returned_and_other_calls_reach_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pulsar, "Error", _Error)
    made = _Made()
    calls = MessagedCalls(_Inner(made), 1)
    assert calls.create_producer("t", object()) is made
    assert not made.closed.is_set()
    assert calls.get_schema_info("t") == "schema of t"
