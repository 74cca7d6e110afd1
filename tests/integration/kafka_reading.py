"""Reading with the Kafka facade in tests: bounded waits, never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Message

from hotstandby.adapters.kafka import Consumer


def hold(consumer: Consumer, count: int, timeout: float = 60.0) -> list[Message]:
    """The next ``count`` records, kept (not committed)."""
    held: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(held) < count:
        assert time.monotonic() < deadline, f"{len(held)} of {count} records"
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            held.append(msg)
    return held


def consume(consumer: Consumer, count: int, timeout: float = 60.0) -> list[str]:
    """Values of the next ``count`` records (fails after ``timeout``)."""
    return [m.value().decode() for m in hold(consumer, count, timeout)]


def consume_until(
    consumer: Consumer, done: Callable[[], bool], timeout: float = 60.0, what: Callable[[], str] = str
) -> list[str]:
    """Keep polling (and collecting) until ``done()``; fails after ``timeout``."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s {what()}"
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
    return got


def consume_all(consumer: Consumer, wanted: set[str], timeout: float = 60.0) -> list[str]:
    """Values polled until every one of ``wanted`` arrived (fails after ``timeout``)."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while not wanted <= set(got):
        assert time.monotonic() < deadline, f"not delivered within {timeout} s: {sorted(wanted - set(got))}"
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
    return got


def no_more(consumer: Consumer, within: float = 3.0) -> list[str]:
    """Records that still arrive within ``within`` s (a bounded wait for an absence)."""
    extra, deadline = [], time.monotonic() + within
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            extra.append(msg.value().decode())
    return extra
