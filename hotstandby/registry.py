"""Lazy registry of messaging-system adapters, with install hints.

``import hotstandby`` never imports confluent_kafka, pulsar or pyspark: an adapter module is
imported the first time something asks for it, and a missing client library — or one older
than the adapter needs (``floor``, the same as in pyproject.toml) — becomes a
:class:`~hotstandby.errors.MissingDependencyError` that names what to install.

A messaging system joins with one :class:`AdapterInfo` entry here and its package, whose
``adapter`` module provides the :class:`~hotstandby.adapter.Adapter` (without importing the
client library: the config center and the probe use it). A system without a client library
leaves ``client_module`` empty.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from dataclasses import dataclass
from types import ModuleType

from hotstandby.errors import MissingDependencyError, ValidationError

__all__ = ["AdapterInfo", "adapter_info", "import_adapter_module", "import_for_kind", "kinds"]


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """Where an adapter lives and what it needs."""

    kind: str
    package: str
    client_module: str
    extra: str
    distribution: str  # the client library on PyPI
    floor: str  # the oldest version the adapter works with


_ADAPTERS: dict[str, AdapterInfo] = {
    # confluent-kafka 2.13 is the first that lets the consumer make Message objects; 2.16 has the
    # serde builder the serde clients configure serializers with.
    "kafka": AdapterInfo("kafka", "hotstandby.adapters.kafka", "confluent_kafka", "kafka", "confluent-kafka", "2.16"),
    # pulsar-client 3.8 is the first whose create_producer takes a message_router; 3.8.0 crashed
    # (SIGSEGV) in 2 of 3 runs of the Pulsar adapter contract test, 3.9.0 and 3.10.0 in none.
    "pulsar": AdapterInfo("pulsar", "hotstandby.adapters.pulsar", "pulsar", "pulsar", "pulsar-client", "3.9"),
    # In-memory clusters for tests and the failover simulation: no client library.
    "memory": AdapterInfo("memory", "hotstandby.adapters.memory", "", "", "", ""),
}
_CHECKED: set[str] = set()


def installed_version(distribution: str) -> str:
    return importlib.metadata.version(distribution)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def kinds() -> tuple[str, ...]:
    """The kinds of messaging system an adapter is registered for (``ClusterSpec.kind``)."""
    return tuple(_ADAPTERS)


def adapter_info(kind: str) -> AdapterInfo:
    try:
        return _ADAPTERS[kind]
    except KeyError:
        raise ValidationError("kind", f"no adapter for {kind!r}; known: {', '.join(sorted(_ADAPTERS))}") from None


def import_adapter_module(kind: str, module: str = "") -> ModuleType:
    """Import ``hotstandby.adapters.<kind>[.<module>]``, naming the extra if a library is missing."""
    info = adapter_info(kind)
    return import_for_kind(kind, f"{info.package}.{module}" if module else info.package)


def import_for_kind(kind: str, name: str) -> ModuleType:
    """Import module ``name``, which may need the ``kind`` adapter's client library (a tool's
    part for that system, say): a missing or too old library names what to install."""
    info = adapter_info(kind)
    try:
        imported = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == info.client_module:
            raise MissingDependencyError(
                f"the {kind} adapter needs {info.client_module}: pip install 'hotstandby[{info.extra}]'"
            ) from exc
        raise
    if info.kind not in _CHECKED and info.client_module in sys.modules:
        _check_floor(info)
    return imported


def _check_floor(info: AdapterInfo) -> None:
    try:
        version = installed_version(info.distribution)
    except importlib.metadata.PackageNotFoundError:
        version = ""  # built from source without metadata: nothing to compare
    if version and _release(version) < _release(info.floor):
        raise MissingDependencyError(
            f"the {info.kind} adapter needs {info.distribution}>={info.floor}, {version} is installed: "
            f"pip install '{info.distribution}>={info.floor}'"
        )
    _CHECKED.add(info.kind)
