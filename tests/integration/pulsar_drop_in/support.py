"""What the drop-in tests share: the route, quiet logging, a fresh topic, an outcome."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pulsar

ROUTE = "payments"
EARLIEST = pulsar.InitialPosition.Earliest


def quiet() -> pulsar.ConsoleLogger:
    return pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


def fresh_topic() -> str:
    return f"persistent://public/default/drop-in-{uuid.uuid4().hex[:8]}"


def outcome(call: Callable[[], Any], family: type[Exception] | None = None) -> str:
    """``ok`` or the name of the exception ``call`` raised (of ``family``, when given)."""
    try:
        call()
    except Exception as exc:  # the exception is the outcome
        return family.__name__ if family is not None and isinstance(exc, family) else type(exc).__name__
    return "ok"
