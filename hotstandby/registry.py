"""Lazy registry of messaging-system adapters, with install hints.

``import hotstandby`` never imports confluent_kafka, pulsar or pyspark: an adapter module is
imported the first time something asks for it, and a missing client library becomes a
:class:`~hotstandby.errors.MissingDependencyError` that names the extra to install.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from hotstandby.errors import MissingDependencyError, ValidationError

__all__ = ["AdapterInfo", "adapter_info", "import_adapter_module"]


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """Where an adapter lives and what it needs."""

    kind: str
    package: str
    client_module: str
    extra: str


_ADAPTERS: dict[str, AdapterInfo] = {
    "kafka": AdapterInfo("kafka", "hotstandby.adapters.kafka", "confluent_kafka", "kafka"),
    "pulsar": AdapterInfo("pulsar", "hotstandby.adapters.pulsar", "pulsar", "pulsar"),
}


def adapter_info(kind: str) -> AdapterInfo:
    try:
        return _ADAPTERS[kind]
    except KeyError:
        raise ValidationError("kind", f"no adapter for {kind!r}; known: {', '.join(sorted(_ADAPTERS))}") from None


def import_adapter_module(kind: str, module: str = "") -> ModuleType:
    """Import ``hotstandby.adapters.<kind>[.<module>]``, naming the extra if a library is missing."""
    info = adapter_info(kind)
    name = f"{info.package}.{module}" if module else info.package
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == info.client_module:
            raise MissingDependencyError(
                f"the {kind} adapter needs {info.client_module}: pip install 'hotstandby[{info.extra}]'"
            ) from exc
        raise
