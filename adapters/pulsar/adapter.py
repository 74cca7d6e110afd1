"""The Pulsar adapter (pulsar-client): see :mod:`hotstandby.adapter`.

Pulsar message properties are text, so the identity travels as the lowercase hex form of the
same bytes a Kafka header holds (``hs-id`` = ``"01..."``).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from typing import Any

from hotstandby.adapter import TlsSettings, flag, host_ports
from hotstandby.adapters.pulsar import probe as pulsar_probe
from hotstandby.errors import FormatError
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.logs import get_logger

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
_SCHEME = re.compile(r"^pulsar(\+ssl)?://(?=[^/\s])")
_USERINFO = re.compile(r"^[^@/\s]*@")  # user:password@ before the hosts


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
    one (logged): such a message is handed out, never filtered. A message the SDK's consumer
    or reader handed out keeps its identity aside (its properties do not show it)."""
    key = getattr(msg, "_hs_key", None)
    if isinstance(key, RecordId):
        return key
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
    url_field = "service_url"
    url_form = "pulsar://host:port[,host:port] (pulsar+ssl:// for TLS)"
    cluster_keys = ("service_url", "serviceUrl")
    default_partitioner = "java-string"  # the Java client's JavaStringHash
    identity_key = HEADER  # a message property (text)

    def endpoints(self, url: str) -> list[tuple[str, int]]:
        scheme = _SCHEME.match(url)
        if scheme is None:
            raise ValueError(f"not pulsar://host:port: {url[:100]!r}")
        return host_ports(_USERINFO.sub("", url[scheme.end() :]))

    def uses_tls(self, url: str, client: Mapping[str, Any]) -> bool:
        return url.startswith("pulsar+ssl://")

    def tls_settings(self, client: Mapping[str, Any]) -> TlsSettings:
        # pulsar-client's defaults: the certificate is checked, the host name is not.
        ca, cert, key = (client.get(k) for k in ("tls_trust_certs_file_path", "tls_certificate_file_path",
                                                 "tls_private_key_file_path"))  # fmt: skip
        return TlsSettings(
            cafile=str(ca) if ca else None,
            verify=not flag(client.get("tls_allow_insecure_connection", False)),
            check_hostname=flag(client.get("tls_validate_hostname", False)),
            certfile=str(cert) if cert else None,
            keyfile=str(key) if key else None,
            cafile_setting="tls_trust_certs_file_path",
        )

    def probe(self, host: str, port: int, timeout: float, *, tls: ssl.SSLContext | None = None) -> str:
        return pulsar_probe.probe(host, port, timeout, tls=tls)

    def encode_identity(self, rid: RecordId) -> str:
        return encode_identity(rid)

    def decode_identity(self, raw: bytes | str) -> RecordId:
        return decode_identity(raw)

    def clients(self) -> dict[str, type]:
        # Imported on demand: it needs pulsar, this module does not.
        from hotstandby.adapters.pulsar.client.client import Client

        return {"Client": Client}


ADAPTER = PulsarAdapter()
