"""The Pulsar consumer's message listener thread (no broker: a stand-in receive)."""

from __future__ import annotations

import queue
import threading
from typing import Any

import pulsar

from hotstandby.adapters.pulsar.listener import MessageListener
from tests.support import capture_logs, wait_for


class _Source:
    """Stands in for the consumer's receive: hands out what is put in, Timeout when empty."""

    def __init__(self) -> None:
        self.items: queue.Queue[Any] = queue.Queue()
        self.closed = False

    def receive(self, timeout_millis: int) -> Any:
        if self.closed:
            raise pulsar.AlreadyClosed("closed")
        try:
            return self.items.get(timeout=timeout_millis / 1000)
        except queue.Empty:
            raise pulsar.Timeout("none") from None


def test_the_listener_gets_each_message_with_the_consumer_and_pauses_and_resumes() -> None:
    source, got, consumer = _Source(), [], object()
    listener = MessageListener(consumer, lambda c, m: got.append((c, m)), source.receive)
    try:
        source.items.put("a")
        wait_for(lambda: got == [(consumer, "a")], 5, "the first call")
        listener.pause()
        source.items.put("b")
        listener.resume()
        wait_for(lambda: len(got) == 2, 5, "the message sent while paused")
    finally:
        listener.stop(5)
    assert [m for _c, m in got] == ["a", "b"]


def test_a_failing_listener_is_logged_and_called_again() -> None:
    source, got = _Source(), []

    def listener(_consumer: object, msg: str) -> None:
        got.append(msg)
        if msg == "bad":
            raise RuntimeError("application bug")

    with capture_logs() as logs:
        running = MessageListener(object(), listener, source.receive)
        try:
            source.items.put("bad")
            source.items.put("good")
            wait_for(lambda: got == ["bad", "good"], 5, "both calls")
        finally:
            running.stop(5)
    failed = [e for e in logs if e["event"] == "consumer.listener_failed"]
    assert len(failed) == 1 and "application bug" in failed[0]["error"]


def test_stop_ends_the_thread_and_a_closed_consumer_ends_it_too() -> None:
    before = set(threading.enumerate())
    source = _Source()
    listener = MessageListener(object(), lambda c, m: None, source.receive)
    listener.stop(5)
    assert set(threading.enumerate()) <= before
    source.closed = True
    MessageListener(object(), lambda c, m: None, source.receive)
    wait_for(lambda: set(threading.enumerate()) <= before, 5, "the thread to end on AlreadyClosed")
