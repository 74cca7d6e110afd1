"""The Pulsar adapter (pulsar-client): see :mod:`hotstandby.adapter`.

Pulsar message properties are text, so the identity travels as the lowercase hex form of the
same bytes a Kafka header holds (``hs-id`` = ``"01..."``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotstandby.adapters.pulsar import probe as pulsar_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.logs import get_logger

if TYPE_CHECKING:
    from hotstandby.drill.report import DrillReport
    from hotstandby.refcluster import RefCluster

__all__ = [
    "ADAPTER",
    "REPLICATED_FROM",
    "REPL_SOURCE_POSITION",
    "PulsarAdapter",
    "decode_identity",
    "encode_identity",
    "identity_in",
    "identity_of",
]

log = get_logger("hotstandby.pulsar")

# Properties of a replicated copy: its position on the source cluster (``"<ledgerId>:<entryId>"``,
# as Pulsar >= 3.0.11 geo-replication adds) and, from the reference replicator, the source
# cluster's name (Pulsar marks copies with ``replicated_from``, which clients cannot read).
REPL_SOURCE_POSITION = "__MSG_PROP_REPL_SOURCE_POSITION"
REPLICATED_FROM = "hs.replicated.from"


def encode_identity(rid: RecordId) -> str:
    return rid.encode().hex()


def decode_identity(raw: bytes | str) -> RecordId:
    if not isinstance(raw, str):
        raise FormatError("hs-id: a Pulsar property carries text, got bytes")
    try:
        data = bytes.fromhex(raw)
    except ValueError:
        raise FormatError(f"hs-id: not hexadecimal: {raw[:40]!r}") from None
    rid: RecordId = RecordId.decode(data)
    return rid


def identity_of(msg: Any) -> RecordId | None:
    """A received message's identity; None when it has none (not written by the SDK) or a bad
    one (logged): such a message is handed out, never filtered."""
    return identity_in(msg.properties(), msg)


def identity_in(properties: dict[str, str], msg: Any) -> RecordId | None:
    """:func:`identity_of` from the message's properties, when the caller has them already."""
    raw: str | None = properties.get(HEADER)
    if raw is None:
        return None
    try:
        # Once per message received: decode_identity's own checks only when this fails.
        rid: RecordId = RecordId.decode(bytes.fromhex(raw))
        return rid
    except (ValueError, TypeError, FormatError):
        pass
    try:
        return decode_identity(raw)  # says what is wrong (FormatError)
    except FormatError as exc:
        log.warning("record.bad_identity", topic=msg.topic_name(), message_id=str(msg.message_id()), error=str(exc))
        return None


class PulsarAdapter:
    kind = "pulsar"
    identity_key = HEADER  # a message property (text)

    def probe(self, host: str, port: int, timeout: float) -> str:
        summary: str = pulsar_probe.probe(host, port, timeout)
        return summary

    def encode_identity(self, rid: RecordId) -> str:
        return encode_identity(rid)

    def decode_identity(self, raw: bytes | str) -> RecordId:
        return decode_identity(raw)

    def clients(self) -> dict[str, type]:
        from hotstandby.adapters.pulsar.client import Client

        return {"Client": Client}

    def drill(self, rc: RefCluster, options: Any, progress: Callable[[Any], None] | None = None) -> DrillReport:
        from hotstandby.drill.pulsar import run_pulsar_drill

        return run_pulsar_drill(rc, options, progress)


ADAPTER = PulsarAdapter()
