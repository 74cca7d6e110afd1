"""Pulsar adapter (pulsar-client): a drop-in ``Client`` that follows a route.

``from hotstandby.adapters.pulsar import Client`` imports pulsar; this package itself does
not, so the probe works without it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from hotstandby.registry import import_adapter_module

        return import_adapter_module("pulsar", "client").Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
