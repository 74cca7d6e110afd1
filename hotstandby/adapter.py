"""What the core asks of a messaging system: the adapter interface.

The core (config center, route following, switching, ledgers, :class:`AckTracker`) knows
nothing of Kafka or Pulsar shapes. Each system's package (``hotstandby.adapters.<kind>``)
provides, in its ``adapter`` module, one :class:`Adapter` named ``ADAPTER``:

* how to tell that a broker answers (one protocol handshake over a socket);
* where the record identity travels and in which form (a Kafka header holds bytes, a Pulsar
  property must be text);
* the drop-in clients (whose method names are the system's own, so they are not part of
  this interface) and the drill that proves them: records produced and consumed across flips
  of the route, nothing lost, nothing duplicated.

``tests/contract/adapter.py`` holds the behaviour every adapter must show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hotstandby.failover.identity import RecordId
from hotstandby.registry import import_adapter_module

if TYPE_CHECKING:
    from hotstandby.drill.report import DrillReport
    from hotstandby.refcluster import RefCluster

__all__ = ["Adapter", "load_adapter"]


@runtime_checkable
class Adapter(Protocol):
    """One messaging system, as the core sees it (stateless; one instance per system)."""

    kind: str
    identity_key: str  # the header / property that carries the record identity

    def probe(self, host: str, port: int, timeout: float) -> str:
        """Raise ``OSError`` or :class:`~hotstandby.failover.probe.ProtocolError` unless the broker at
        ``host:port`` answers the protocol's handshake within ``timeout`` s; a short summary."""
        ...

    def encode_identity(self, rid: RecordId) -> bytes | str:
        """The identity as the system carries it."""
        ...

    def decode_identity(self, raw: bytes | str) -> RecordId:
        """The identity from what the system delivered; :class:`~hotstandby.errors.FormatError`
        when it is not one (such a record is handed out, never filtered)."""
        ...

    def clients(self) -> dict[str, type]:
        """The drop-in client classes, by the name users import them under."""
        ...

    def drill(self, rc: RefCluster, options: Any, progress: Callable[[Any], None] | None = None) -> DrillReport:
        """Run the system's drill on the running reference cluster ``rc``."""
        ...


def load_adapter(kind: str) -> Adapter:
    """The adapter of ``kind`` (imports its client library; a missing one names the extra)."""
    adapter = import_adapter_module(kind, "adapter").ADAPTER
    if not isinstance(adapter, Adapter):
        raise TypeError(f"hotstandby.adapters.{kind}.adapter.ADAPTER does not implement Adapter")
    return adapter
