"""The stall watch of the Pulsar reader: a quiet reader is checked once per quiet period, off
the caller's thread, and replaced only when the broker has messages left for it."""

from __future__ import annotations

import threading

import pulsar

from hotstandby.adapters.pulsar.reader.stall_watch import StallWatch
from tests.support import wait_for


class FakeReader:
    def __init__(self, left: bool | Exception) -> None:
        self.left = left
        self.asked = 0
        self.release = threading.Event()
        self.release.set()

    def has_message_available(self) -> bool:
        self.asked += 1
        self.release.wait(5)
        if isinstance(self.left, Exception):
            raise self.left
        return self.left


class Msg:
    def __init__(self, mid: pulsar.MessageId) -> None:
        self.mid = mid

    def message_id(self) -> pulsar.MessageId:
        return self.mid


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def watch_with(clock: Clock) -> tuple[StallWatch, list[tuple[object, object]]]:
    replaced: list[tuple[object, object]] = []
    return StallWatch("t", lambda inner, last: replaced.append((inner, last)), quiet_s=10, clock=clock), replaced


def test_a_reader_quiet_with_messages_left_is_replaced_after_the_last_message_read() -> None:
    clock = Clock()
    watch, replaced = watch_with(clock)
    inner = FakeReader(left=True)
    last = pulsar.MessageId(0, 7, 3, -1)
    watch.heard(Msg(last))
    watch.quiet(inner)  # the first empty read after a message: the quiet period starts
    clock.now += 9.9
    watch.quiet(inner)
    assert inner.asked == 0, "not quiet long enough"
    clock.now += 0.2
    watch.quiet(inner)
    wait_for(lambda: watch.replaced == 1, 5, "the replacement")
    assert replaced == [(inner, last)] and inner.asked == 1


def test_a_quiet_reader_with_nothing_left_stays() -> None:
    clock = Clock()
    watch, replaced = watch_with(clock)
    inner = FakeReader(left=False)
    clock.now += 11
    watch.quiet(inner)
    wait_for(lambda: inner.asked == 1 and not watch._checking, 5, "the check")
    watch.quiet(inner)
    assert inner.asked == 1, "asked again only after another quiet period"
    clock.now += 11
    watch.quiet(inner)
    wait_for(lambda: inner.asked == 2 and not watch._checking, 5, "the second check")
    assert replaced == [] and watch.replaced == 0


def test_one_check_at_a_time_and_a_broker_that_fails_the_question_replaces_nothing() -> None:
    clock = Clock()
    watch, replaced = watch_with(clock)
    inner = FakeReader(left=pulsar.ConnectError("Pulsar error: ConnectError"))
    inner.release.clear()  # the broker takes its time
    clock.now += 11
    watch.quiet(inner)
    wait_for(lambda: inner.asked == 1, 5, "the check to start")
    clock.now += 11
    watch.quiet(inner)  # the first check still runs
    inner.release.set()
    wait_for(lambda: not watch._checking, 5, "the check to end")
    assert inner.asked == 1 and replaced == []


def test_a_message_heard_or_a_new_reader_starts_the_quiet_period_again() -> None:
    clock = Clock()
    watch, _ = watch_with(clock)
    inner = FakeReader(left=True)
    clock.now += 8
    watch.heard(Msg(pulsar.MessageId(0, 1, 1, -1)))
    clock.now += 8
    watch.quiet(inner)  # a message came since: the quiet period starts here
    clock.now += 8
    watch.quiet(inner)
    watch.watch()
    clock.now += 8
    watch.quiet(inner)
    assert inner.asked == 0
