"""Structured logging: one event name per thing that happened, fields not prose.

The library only calls :func:`get_logger`; it never configures logging on import. An
application keeps its own structlog configuration, or calls :func:`configure` (the CLI does)
to get our processors, including :func:`redact_secrets`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["REDACTED", "configure", "get_logger", "redact_secrets"]

REDACTED = "***"

# Substrings of field names (or of client-config keys) whose values are never logged.
_SECRET_MARKERS = ("password", "secret", "token", "credential", "sasl.jaas", "private.key", "auth_params")


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and _is_secret(k) else _redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v) for v in value)
    return value


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: replace secret-looking fields, also inside nested dicts."""
    for key in list(event_dict):
        if key != "event" and _is_secret(key):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = _redact(event_dict[key])
    return event_dict


def get_logger(name: str = "hotstandby") -> Any:
    """The logger every hotstandby module uses."""
    return structlog.get_logger(name)


def _stderr_logger(*_args: Any) -> structlog.PrintLogger:
    # Look sys.stderr up per logger, not once: it may be replaced after configure().
    return structlog.PrintLogger(sys.stderr)


def configure(level: str = "info", *, json: bool = False) -> None:
    """Configure structlog for a process that has no logging setup of its own (the CLI)."""
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
