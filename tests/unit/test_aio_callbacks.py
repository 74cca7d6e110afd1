"""Coroutine callbacks of the asyncio Kafka facades: the facade calls a callback makes run on
the thread that called it back, which may hold the facade's lock."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator

import pytest

from hotstandby.adapters.kafka.aio_callbacks import call_back, on_callers_thread


@pytest.fixture()
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running on a thread of its own, as an application's would."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()


@pytest.fixture()
def executor() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    yield pool
    pool.shutdown(wait=True)


def test_a_call_from_a_callback_runs_on_the_thread_that_holds_the_facades_lock(
    loop: asyncio.AbstractEventLoop, executor: concurrent.futures.Executor
) -> None:
    lock = threading.RLock()  # the facade's: held by poll while it calls on_assign

    def assign() -> tuple[bool, int]:
        got = lock.acquire(timeout=2)
        if got:
            lock.release()
        return got, threading.get_ident()

    async def on_assign(consumer: object, partitions: list[int]) -> tuple[bool, int]:
        assert partitions == [0, 1]
        result: tuple[bool, int] = await on_callers_thread(executor, assign)
        return result

    with lock:
        acquired, thread = call_back(loop, on_assign, object(), [0, 1])
    assert acquired
    assert thread == threading.get_ident()


def test_a_call_outside_any_callback_runs_on_the_executor(
    loop: asyncio.AbstractEventLoop, executor: concurrent.futures.ThreadPoolExecutor
) -> None:
    async def call() -> int:
        ident: int = await on_callers_thread(executor, threading.get_ident)
        return ident

    ident = asyncio.run_coroutine_threadsafe(call(), loop).result(5)
    assert ident not in (threading.get_ident(), loop_thread(loop))


def loop_thread(loop: asyncio.AbstractEventLoop) -> int:
    return int(asyncio.run_coroutine_threadsafe(asyncio.sleep(0, threading.get_ident()), loop).result(5))


def test_a_task_the_callback_started_calls_on_the_executor_once_the_callback_returned(
    loop: asyncio.AbstractEventLoop, executor: concurrent.futures.Executor
) -> None:
    later: concurrent.futures.Future[int] = concurrent.futures.Future()
    go = asyncio.Event()

    async def after() -> None:
        await go.wait()
        later.set_result(await on_callers_thread(executor, threading.get_ident))

    async def on_revoke(consumer: object, partitions: list[int]) -> None:
        asyncio.get_running_loop().create_task(after())  # inherits the callback's context

    call_back(loop, on_revoke, object(), [])
    loop.call_soon_threadsafe(go.set)
    assert later.result(5) != threading.get_ident()  # not waited for by this thread any more


def test_errors_reach_the_callback_and_then_the_thread_that_called_back(
    loop: asyncio.AbstractEventLoop, executor: concurrent.futures.Executor
) -> None:
    def refuse() -> None:
        raise ValueError("refused")

    async def on_assign(consumer: object, partitions: list[int]) -> None:
        with pytest.raises(ValueError, match="refused"):
            await on_callers_thread(executor, refuse)
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        call_back(loop, on_assign, object(), [])


def test_a_plain_function_is_a_callback_too(loop: asyncio.AbstractEventLoop) -> None:
    seen: list[str] = []
    assert call_back(loop, lambda err: seen.append(err) or len(seen), "e1") == 1
    assert seen == ["e1"]


def test_a_callback_called_on_its_loops_thread_is_refused_instead_of_waiting_for_itself(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def on_loop() -> None:
        call_back(loop, lambda: None)

    with pytest.raises(RuntimeError, match="event loop's thread"):
        asyncio.run_coroutine_threadsafe(on_loop(), loop).result(5)


def test_a_thread_waiting_for_a_callback_gives_up_when_the_loop_is_closed() -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    started = threading.Event()

    async def never() -> None:
        started.set()
        await asyncio.Event().wait()

    def stop_and_close() -> None:
        assert started.wait(5)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()

    closer = threading.Thread(target=stop_and_close)
    closer.start()
    with pytest.raises(RuntimeError, match="closed"):
        call_back(loop, never)
    closer.join(5)
