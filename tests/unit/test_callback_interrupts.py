"""A Ctrl-C that a delivery callback saw reaches flush()'s caller as KeyboardInterrupt, even
when confluent-kafka loses it on the way out (SystemError without an exception)."""

from __future__ import annotations

import contextlib

import pytest

from hotstandby.adapters.kafka.producer.callback_interrupts import CallbackInterrupts


def lost_on_the_way_out(interrupts: CallbackInterrupts, interrupted: bool) -> int:
    """What confluent-kafka's flush does: serves a callback, then fails as when it lost its error."""
    try:
        with interrupts.watching():
            if interrupted:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass  # taken inside librdkafka's call
    raise SystemError("<built-in method flush> returned NULL without setting an exception")


def test_an_interrupt_a_callback_saw_is_raised_again() -> None:
    interrupts = CallbackInterrupts()
    with pytest.raises(KeyboardInterrupt):
        interrupts.serve(lambda wait: lost_on_the_way_out(interrupts, True), 0.1)


def test_any_other_system_error_is_left_alone_and_a_served_call_answers() -> None:
    interrupts = CallbackInterrupts()
    with pytest.raises(SystemError):
        interrupts.serve(lambda wait: lost_on_the_way_out(interrupts, False), 0.1)
    assert interrupts.serve(lambda wait: 3, 0.1) == 3
    with pytest.raises(KeyboardInterrupt):  # raised where it belongs: passed through as it is
        interrupts.serve(lambda wait: lost_on_the_way_out(interrupts, True), 0.1)
    with pytest.raises(SystemError):  # the next call starts afresh
        interrupts.serve(lambda wait: lost_on_the_way_out(interrupts, False), 0.1)


def test_an_interrupt_in_librdkafkas_logger_is_raised_again_and_its_lines_still_logged() -> None:
    interrupts = CallbackInterrupts()
    lines: list[tuple[object, ...]] = []

    class Logger:
        def log(self, *args: object) -> None:
            lines.append(args)
            if args[-1] == "interrupted":
                raise KeyboardInterrupt

    logger = interrupts.logging({"logger": Logger(), "acks": "all"})["logger"]

    def flush(wait: float) -> int:
        logger.log(7, "%s [%s] %s", "FAC", "rdkafka#producer-1", "a line")
        with contextlib.suppress(KeyboardInterrupt):  # lost inside confluent-kafka
            logger.log(7, "%s [%s] %s", "FAC", "rdkafka#producer-1", "interrupted")
        raise SystemError("<built-in method flush> returned NULL without setting an exception")

    with pytest.raises(KeyboardInterrupt):
        interrupts.serve(flush, 0.1)
    assert [line[-1] for line in lines] == ["a line", "interrupted"]
    assert interrupts.logging({"acks": "all"}) == {"acks": "all"}, "no logger: nothing to watch"
