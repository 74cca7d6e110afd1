"""Which consumer group protocol a consumer joins with.

KIP-848's protocol (``group.protocol=consumer``) has no initial rebalance delay and hands
partitions to members one by one: after a switch the consumers hold their partitions on the
new cluster within a second, where the classic protocol waits for the broker's
``group.initial.rebalance.delay.ms`` (3 s by default) and a rebalance of the whole group — a
planned switch's p50 of 6.3 s against 0.42 s on Apache Kafka 4.3.1 with its defaults
(docs/performance.md). The SDK therefore joins with it when the application chose neither a
protocol nor a setting of the classic protocol's, and the cluster enabled it: its finalized
``group.version`` feature is 1 or more (ApiVersions v3, KIP-584), as on Kafka 4.0 and later.
Kafka 3.7 to 3.9 list the protocol's API (ConsumerGroupHeartbeat) without serving it unless
configured to, so the API alone does not tell. Otherwise, and when no broker answers the
question, the classic protocol.

It asks for the broker's ``range`` assignor: a member then holds the same partitions of a topic
and of its remote copies (docs/guarantees.md), which the default ``uniform`` one does not
promise. ``group.protocol=classic`` keeps the classic protocol.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from hotstandby.adapters.kafka.wire.probe import finalized_features
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import ProtocolError, tls_context
from hotstandby.logs import get_logger

__all__ = ["group_settings", "incremental"]

log = get_logger("hotstandby.kafka.consumer")

_GROUP_VERSION = "group.version"  # the feature whose level 1 enables KIP-848's protocol
# Settings of the classic protocol only: an application that sets one chose it.
_CLASSIC_ONLY = ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms",
                 "group.protocol.type")  # fmt: skip
_ASK_TIMEOUT_S = 2.0


def group_settings(spec: ClusterSpec, config: Mapping[str, Any]) -> dict[str, str]:
    """The settings to add to ``config`` (a consumer of ``spec``) for KIP-848's protocol, or
    none (see the module doc)."""
    if "group.id" not in config or "group.protocol" in config or any(key in config for key in _CLASSIC_ONLY):
        return {}
    tls = tls_context(spec)
    for host, port in spec.endpoints():
        try:
            features = finalized_features(host, port, _ASK_TIMEOUT_S, tls=tls)
        except (OSError, ProtocolError, struct.error, UnicodeDecodeError):
            continue
        if features.get(_GROUP_VERSION, 0) >= 1:
            return {"group.protocol": "consumer", "group.remote.assignor": "range"}
        return {}
    log.info("consumer.group_protocol_unknown", cluster=spec.name, note="no broker answered: the classic protocol")
    return {}


def incremental(config: Mapping[str, Any]) -> bool:
    """Whether a consumer with ``config`` gets its partitions added and taken one by one
    (cooperative-sticky, or KIP-848's protocol): its rebalance callbacks hear of those only,
    and librdkafka refuses a whole assignment there."""
    return (
        "cooperative" in str(config.get("partition.assignment.strategy", ""))
        or str(config.get("group.protocol", "")).lower() == "consumer"
    )
