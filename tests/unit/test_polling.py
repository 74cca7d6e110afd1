"""polling.wait_until and polling.patiently on a clock the test moves."""

from __future__ import annotations

import pytest

from hotstandby.configcenter.polling import patiently, wait_until
from hotstandby.errors import ConfigCenterError, ConfigCenterUnavailable
from tests.support import ManualClock


def test_wait_until_backs_off_and_gives_up_at_the_deadline() -> None:
    clock = ManualClock()
    assert not wait_until(lambda: False, 1.0, first=0.1, most=0.4, clock=clock)
    assert clock.sleeps[:3] == [0.1, 0.2, 0.4] and max(clock.sleeps) == 0.4
    assert clock.now == pytest.approx(1.0)


def test_patiently_retries_while_etcd_is_unreachable_then_returns() -> None:
    clock = ManualClock()
    answers = iter([ConfigCenterUnavailable("down"), ConfigCenterUnavailable("down"), "value"])

    def call() -> str:
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    assert patiently(call, 5.0, clock=clock) == "value"
    assert len(clock.sleeps) == 2


def test_patiently_raises_the_last_outage_after_the_timeout() -> None:
    clock = ManualClock()
    calls: list[float] = []

    def call() -> str:
        calls.append(clock.now)
        raise ConfigCenterUnavailable(f"down at {clock.now:.2f}")

    with pytest.raises(ConfigCenterUnavailable, match=r"down at 2\.00"):
        patiently(call, 2.0, clock=clock)
    assert calls[0] == 0.0 and calls[-1] == pytest.approx(2.0)


def test_patiently_does_not_retry_other_errors() -> None:
    calls = []

    def call() -> None:
        calls.append(1)
        raise ConfigCenterError("a bad request is not an outage")

    with pytest.raises(ConfigCenterError):
        patiently(call, 5.0, clock=ManualClock())
    assert calls == [1]
