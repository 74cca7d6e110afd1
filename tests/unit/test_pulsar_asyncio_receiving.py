"""The asyncio Pulsar facade's receiving: a message that arrives for a receive cancelled
meanwhile is handed out by the next one; errors come as pulsar.asyncio raises them."""

from __future__ import annotations

import asyncio
import threading

import pulsar
import pytest

from hotstandby.adapters.pulsar.asyncio import PulsarException, _Receiving


class Arrivals:
    """A blocking ``receive(timeout_ms)``: messages put in arrive; none within the slice is
    ``pulsar.Timeout``, as pulsar-client raises it."""

    def __init__(self) -> None:
        self._ready: list[str] = []
        self._cv = threading.Condition()
        self.calls = 0

    def put(self, value: str) -> None:
        with self._cv:
            self._ready.append(value)
            self._cv.notify_all()

    def receive(self, timeout_ms: int) -> str:
        with self._cv:
            self.calls += 1
            if not self._cv.wait_for(lambda: self._ready, timeout_ms / 1000):
                raise pulsar.Timeout("Pulsar error: TimeOut")
            return self._ready.pop(0)


def test_a_message_for_a_cancelled_receive_goes_to_the_next() -> None:
    arrivals = Arrivals()
    receiving = _Receiving(arrivals.receive, "test-receive")  # type: ignore[arg-type]

    async def scenario() -> list[str]:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(receiving.next(), 0.05)  # given up while the thread waits
        arrivals.put("m0")  # arrives for the receive given up
        arrivals.put("m1")
        return [str(await asyncio.wait_for(receiving.next(), 5)) for _ in range(2)]

    try:
        assert asyncio.run(scenario()) == ["m0", "m1"], "nothing lost, in order"
    finally:
        receiving.close()


def test_a_failure_is_pulsar_asyncios_exception() -> None:
    def refuse(timeout_ms: int) -> str:
        raise pulsar.AlreadyClosed("Pulsar error: AlreadyClosed")

    receiving = _Receiving(refuse, "test-receive")  # type: ignore[arg-type]
    try:
        with pytest.raises(PulsarException) as failed:
            asyncio.run(receiving.next())
        assert failed.value.error() == pulsar.Result.AlreadyClosed
    finally:
        receiving.close()
