"""Where librdkafka's own log lines go.

confluent-kafka prints them on stderr unless the configuration names a ``logger``. A library
prints nothing the application did not ask for, and the SDK's clients talk to clusters the
application never named (the cluster a route left may be dead, and librdkafka says so every
second), so each raw client the SDK makes for an application's client logs to the
``hotstandby.librdkafka`` logger — silent unless the application configures logging — unless
the application gave a ``logger`` of its own. confluent-kafka forwards the lines when the
client is polled.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = ["LIBRDKAFKA_LOGGER", "with_logger"]

LIBRDKAFKA_LOGGER = logging.getLogger("hotstandby.librdkafka")

# Warnings about settings the SDK itself chose, on every raw client it makes: not news.
_CHOSEN = ("Configuration property enable.gapless.guarantee is experimental",)


class _ChosenSettings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(chosen in message for chosen in _CHOSEN)


LIBRDKAFKA_LOGGER.addFilter(_ChosenSettings())


def with_logger(config: Mapping[str, Any], kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``config`` with the SDK's logger, unless it or ``kwargs`` names one."""
    if "logger" in config or (kwargs is not None and "logger" in kwargs):
        return dict(config)
    return {**config, "logger": LIBRDKAFKA_LOGGER}
