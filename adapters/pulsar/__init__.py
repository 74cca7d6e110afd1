"""Pulsar adapter (pulsar-client): a drop-in ``Client`` that follows a route.

``from hotstandby.adapters.pulsar import Client`` imports pulsar; this package itself does
not, so the probe works without it. Type checkers see the class through the ``TYPE_CHECKING``
import; at run time it is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotstandby.adapters.pulsar.client.client import Client

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from hotstandby.registry import import_adapter_module

        return import_adapter_module("pulsar", "client.client").Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
