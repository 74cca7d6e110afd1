"""A consumer group's state, asked over the Kafka protocol (FindCoordinator, DescribeGroups v4)
on plain or TLS sockets, not through librdkafka's AdminClient.

librdkafka (2.x) aborts the whole process, now and then, in its admin requests to a group
coordinator (``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``, the only
callers of which are those requests): an hour of flips in ``bench/soak.py`` killed the
application process that way. Leaving a group in turn (:mod:`.group_leave`) asks for the
group's state ten times a second while members leave, so it asks here instead
(:mod:`.requests`). A cluster whose clients authenticate with SASL (which these requests
would have to do first), or a group DescribeGroups does not know (a KIP-848 consumer group),
is :data:`UNSUPPORTED`.
"""

from __future__ import annotations

import itertools
import struct

from hotstandby.adapters.kafka.wire.requests import MOVING, CoordinatorMoving, Reader, find_coordinator, request, string
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.probe import ProtocolError, request_frame, tls_context

__all__ = ["UNSUPPORTED", "described_state", "group_state"]

UNSUPPORTED = "Unsupported"  # the state of a group this module cannot ask about
_UNKNOWN = "Unknown"  # no answer yet: no coordinator yet, or it is loading the group
_DESCRIBE_GROUPS, _DESCRIBE_GROUPS_V = 15, 4  # non-flexible, answered by every Kafka since 2.4
_ids = itertools.count(1)


def described_state(reply: bytes, correlation_id: int) -> str:
    """A DescribeGroups v4 response for one group: its state. An error that says the group is
    none of this API's (no such group, a KIP-848 consumer group) is :data:`UNSUPPORTED`."""
    r = Reader(reply)
    if r.take(">i") != correlation_id:
        raise ProtocolError("DescribeGroups: wrong correlation id")
    r.take(">i")  # throttle time
    if r.take(">i") < 1:
        raise ProtocolError("DescribeGroups answered no group")
    error = r.take(">h")
    r.string()  # group id
    state = r.string()
    if error:
        return _UNKNOWN if error in MOVING else UNSUPPORTED
    return state or _UNKNOWN


def group_state(spec: ClusterSpec, group: str, timeout: float = 2.0) -> str | None:
    """``group``'s state on ``spec`` ("Stable", "Empty", "PreparingRebalance", ...); None when
    the cluster does not answer; :data:`UNSUPPORTED` (see the module doc)."""
    if str(spec.client_config("admin").get("security.protocol", "")).upper().startswith("SASL"):
        return UNSUPPORTED
    try:
        tls = tls_context(spec)
        host, port = find_coordinator(spec, group, timeout, tls)
        correlation = next(_ids) & 0x7FFFFFFF
        body = struct.pack(">i", 1) + string(group) + b"\x00"  # one group; no authorized operations
        reply = request_frame(host, port, request(_DESCRIBE_GROUPS, _DESCRIBE_GROUPS_V, correlation, body), timeout,
                              tls=tls)  # fmt: skip
        return described_state(reply, correlation)
    except CoordinatorMoving:
        return _UNKNOWN
    except (OSError, ProtocolError, struct.error, UnicodeDecodeError):
        return None
