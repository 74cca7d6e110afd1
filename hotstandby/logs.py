"""Structured logging through the standard :mod:`logging` module.

The library logs events — one event name per thing that happened, fields not prose — under
``hotstandby.*`` stdlib loggers, and configures nothing: the ``hotstandby`` logger has a
:class:`logging.NullHandler` (the logging HOWTO's advice for a library), so an application
that set up no logging sees no output, and one that did gets ordinary records. Each record's
``msg`` is the event dict (secrets already redacted); its ``str()`` reads
``event key=value ...``, so a plain :class:`logging.Formatter` shows the fields, and
:class:`structlog.stdlib.ProcessorFormatter` renders it as structlog would. structlog's global
configuration is never touched (an application may use structlog for itself): each logger is
its own bound logger over its stdlib logger, and a call below the logger's level returns
after one level check.

Processes without a logging setup of their own (the CLI, the drill, the replicators) call
:func:`configure` to print the events on stderr. Where the application cannot configure logging
itself — the Python processes Spark starts for the data source and its tasks — the
environment variable ``HOTSTANDBY_LOG_LEVEL`` (``debug``, ``info``, ``warning``, ``error``) does
it: :func:`configure_from_env`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog

from hotstandby.secret_refs import REDACTED, has_userinfo, redact_value

__all__ = ["LEVEL_ENV", "REDACTED", "Event", "Seldom", "configure", "configure_from_env", "get_logger",
           "redact_secrets", "reset"]  # fmt: skip


# Substrings of field names (or of client-config keys) whose values are never logged. Not all
# of hotstandby.secret_refs' parts: a field ``key`` (an etcd key, a record's key) is no secret.
_SECRET_MARKERS = ("password", "secret", "token", "credential", "sasl.jaas", "private.key", "private_key",
                   "auth_params", "oauthbearer", "api_key", "apikey", ".pem", "key.pem")  # fmt: skip

ROOT = "hotstandby"
logging.getLogger(ROOT).addHandler(logging.NullHandler())


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and _is_secret(k) else _redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v) for v in value)
    if isinstance(value, str) and has_userinfo(value):
        return redact_value("url", value)  # a URL's user:password@
    return value


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: replace secret-looking fields, also inside nested dicts."""
    for key in list(event_dict):
        if key != "event" and _is_secret(key):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = _redact(event_dict[key])
    return event_dict


class Event(dict[str, Any]):
    """A record's ``msg``: the event dict, shown as ``event key=value ...`` by plain formatters."""

    def __str__(self) -> str:
        fields = " ".join(f"{k}={v!r}" if isinstance(v, str) and " " in v else f"{k}={v}"
                          for k, v in sorted(self.items()) if k != "event")  # fmt: skip
        return f"{self.get('event', '')} {fields}".rstrip()


def _to_record(logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """Last processor: the stdlib call's arguments — ``msg`` is the event dict, and the extras
    are those :class:`structlog.stdlib.ProcessorFormatter` looks for (as ``wrap_for_formatter``)."""
    return (Event(event_dict),), {"extra": {"_logger": logger, "_name": method}}


_PROCESSORS = [redact_secrets, _to_record]


def _checked(name: str, level: int) -> Callable[..., Any]:
    """A bound-logger method that returns at once when ``level`` is not enabled (the common
    case for ``debug``: a level check is all it costs)."""
    proxy = structlog.stdlib.BoundLogger._proxy_to_logger

    def method(self: structlog.stdlib.BoundLogger, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._logger.isEnabledFor(level):
            return proxy(self, name, event, *args, **kw)
        return None

    method.__name__ = name
    return method


class _BoundLogger(structlog.stdlib.BoundLogger):
    """structlog's stdlib bound logger that checks the level before building anything."""

    debug = _checked("debug", logging.DEBUG)
    info = _checked("info", logging.INFO)
    warning = _checked("warning", logging.WARNING)
    error = _checked("error", logging.ERROR)


def get_logger(name: str = ROOT) -> Any:
    """The logger every hotstandby module uses: ``name`` is a ``hotstandby.*`` stdlib logger."""
    return _BoundLogger(logging.getLogger(name), _PROCESSORS, {})


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is at each record: it may be replaced after configure()."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


_configured: list[logging.Handler] = []


def configure(level: str = "info", *, json: bool = False) -> None:
    """Print hotstandby's events on stderr at ``level`` (console lines, or JSON with ``json``),
    for a process that has no logging setup of its own (the CLI, the drill, the replicators).
    Calling it again replaces the previous setup."""
    reset()
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                redact_secrets,
                renderer,
            ],
            # Records not made by get_logger (none today) are rendered from their text.
            foreign_pre_chain=[structlog.processors.add_log_level],
        )
    )
    logger = logging.getLogger(ROOT)
    logger.addHandler(handler)
    logger.setLevel(logging.getLevelName(level.upper()))
    _configured.append(handler)


#: The environment variable :func:`configure_from_env` reads.
LEVEL_ENV = "HOTSTANDBY_LOG_LEVEL"
_LEVELS = ("debug", "info", "warning", "error")


def configure_from_env() -> bool:
    """:func:`configure` at the level ``HOTSTANDBY_LOG_LEVEL`` names, if it is set and nothing
    configured the events yet; whether it did. For processes the application does not start
    itself (Spark's Python workers: ``spark.executorEnv.HOTSTANDBY_LOG_LEVEL``); an unknown
    level prints warnings, and says so."""
    wanted = os.environ.get(LEVEL_ENV, "").strip().lower()
    if not wanted or _configured:
        return False
    configure(wanted if wanted in _LEVELS else "warning")
    if wanted not in _LEVELS:
        get_logger("hotstandby.logs").warning("logs.unknown_level", variable=LEVEL_ENV, value=wanted,
                                              known=list(_LEVELS), using="warning")  # fmt: skip
    return True


def reset() -> None:
    """Undo :func:`configure` (the ``hotstandby`` logger prints nothing again)."""
    logger = logging.getLogger(ROOT)
    while _configured:
        logger.removeHandler(_configured.pop())
    logger.setLevel(logging.NOTSET)


class Seldom:
    """Logs an event at its 1st, 10th, 100th, ... occurrence, with the count: for events that
    can happen once per message, where a log call each time would cost too much."""

    _LOGGED = frozenset(10**n for n in range(15))

    def __init__(self, logger: Any) -> None:
        self._log = logger
        self._counts: dict[str, int] = {}

    def info(self, event: str, **fields: Any) -> None:
        self._emit(self._log.info, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(self._log.warning, event, fields)

    def _emit(self, method: Any, event: str, fields: dict[str, Any]) -> None:
        count = self._counts[event] = self._counts.get(event, 0) + 1
        if count in self._LOGGED:
            method(event, count=count, **fields)
