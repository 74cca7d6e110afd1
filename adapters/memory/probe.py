"""Does an in-memory cluster answer? (The memory adapter's broker handshake.)"""

from __future__ import annotations

import ssl

from hotstandby.adapters.memory.world import lookup

__all__ = ["probe"]


def probe(host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
    """Raise ``ConnectionRefusedError`` unless the in-memory cluster at ``host:port`` is alive."""
    address = f"{host}:{port}"
    try:
        cluster = lookup(address)
    except LookupError as exc:
        raise ConnectionRefusedError(str(exc)) from None
    if not cluster.alive:
        raise ConnectionRefusedError(f"in-memory cluster {cluster.name} at {address} was killed")
    return f"in-memory cluster {cluster.name}, incarnation {cluster.incarnation}"
