"""The drill producer's pacing: lockstep shares between flips, and holds by a workload."""

from __future__ import annotations

import time

from hotstandby.drill.runner import DrillContext, DrillOptions


def context(**options: object) -> DrillContext:
    opts = DrillOptions(**{"messages": 100, "switches": 3, "rate": 1_000_000, **options})  # type: ignore[arg-type]
    return DrillContext(opts, "run", "/ns", "127.0.0.1:1", time.monotonic() + 30)


def test_each_flip_has_its_share_of_the_records() -> None:
    opts = DrillOptions(messages=100, switches=3)
    assert [opts.milestone(k) for k in range(3)] == [25, 50, 75]


def test_lockstep_holds_the_producer_at_the_next_flips_share_serving_its_deliveries() -> None:
    ctx = context(lockstep=True)
    ctx.allowed = ctx.options.milestone(0)
    served: list[float] = []

    def serve(timeout: float) -> None:  # the producer's poll; the third one sees the flip made
        served.append(timeout)
        if len(served) == 3:
            ctx.allowed = ctx.options.milestone(1)

    began = time.monotonic()
    ctx.pace(began, 24, serve)
    assert served == [], "inside the share: not held"
    ctx.pace(began, 25, serve)
    assert len(served) == 3 and ctx.held_s > 0
    ctx.allowed = None
    ctx.pace(began, 99, serve)
    assert len(served) == 3


def test_a_held_producer_goes_on_when_the_drill_stops() -> None:
    ctx = context()
    ctx.producing.clear()
    ctx.stop.set()
    started = time.monotonic()
    ctx.pace(started, 0)  # held until the deadline (30 s) if the stop did not count
    assert time.monotonic() - started < 5
