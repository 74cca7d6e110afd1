"""Members a consumer left behind in a group on a cluster that died, removed when it comes back.

A switch away from a cluster that does not answer cannot leave the group there. Kafka keeps a
group's members in ``__consumer_offsets``: a restarted coordinator loads them, and the first
rebalance after the restart waits for each of them to rejoin or to miss its session timeout
(``session.timeout.ms``, 45 s by default). A failback to that cluster would wait as long.

So the member ids of consumers abandoned that way are kept (per process: :data:`STALE`), and
before a consumer joins the group on that cluster again the SDK sends the coordinator a
``LeaveGroup`` for them (KIP-345's batch form, as Kafka's admin ``removeMembersFromConsumerGroup``
does): the rebalance then goes on without them. Plain sockets, as the reachability probe: a
``FindCoordinator`` to a bootstrap broker, then the ``LeaveGroup`` (both in non-flexible
versions every Kafka since 2.4 answers), over TLS when the cluster's clients use it. Clusters
whose clients authenticate with SASL are left alone (the members expire as before).
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterable

from hotstandby.adapters.kafka.wire.requests import MOVING, CoordinatorMoving, Reader, find_coordinator, request, string
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.polling import wait_until
from hotstandby.failover.probe import ProtocolError, request_frame, tls_context
from hotstandby.logs import get_logger

__all__ = ["STALE", "StaleMembers", "leave_group_request", "parse_leave_group", "remove_members"]

log = get_logger("hotstandby.kafka.consumer")

_LEAVE_GROUP, _LEAVE_GROUP_V = 13, 3
_UNKNOWN_MEMBER_ID = 25  # already gone: as good as removed
_RETRY_S = 0.25


def leave_group_request(correlation_id: int, group: str, members: Iterable[str]) -> bytes:
    """A LeaveGroup v3 request removing the dynamic ``members`` of ``group``."""
    listed = list(members)
    body = string(group) + struct.pack(">i", len(listed))
    for member in listed:
        body += string(member) + struct.pack(">h", -1)  # no group.instance.id
    return request(_LEAVE_GROUP, _LEAVE_GROUP_V, correlation_id, body)


def parse_leave_group(reply: bytes, correlation_id: int) -> tuple[int, dict[str, int]]:
    """(the response's error code, each member's error code) of a LeaveGroup v3 response."""
    r = Reader(reply)
    if r.take(">i") != correlation_id:
        raise ProtocolError("LeaveGroup: wrong correlation id")
    r.take(">i")  # throttle time
    error = r.take(">h")
    members = {}
    for _ in range(max(r.take(">i"), 0)):
        member = r.string() or ""
        r.string()  # group instance id
        members[member] = r.take(">h")
    return error, members


def remove_members(spec: ClusterSpec, group: str, members: Iterable[str], *, timeout: float = 10.0) -> set[str]:
    """Remove ``members`` from ``group`` on ``spec``'s cluster; those now gone from it (removed,
    or unknown there). A coordinator still loading the group (a restarted broker answers
    ``NOT_COORDINATOR`` for a while) is asked again until ``timeout``. Raises OSError or
    ProtocolError when the cluster cannot be asked."""
    listed = sorted(set(members))
    deadline = time.monotonic() + timeout
    gone: list[set[str]] = []
    moving: list[CoordinatorMoving] = []

    def answered() -> bool:
        try:
            gone.append(_leave(spec, group, listed, max(deadline - time.monotonic(), 0.5)))
        except CoordinatorMoving as exc:
            moving[:] = [exc]
            return False
        return True

    # The coordinator's load takes its time: asked again every _RETRY_S.
    if not wait_until(answered, timeout, first=_RETRY_S, most=_RETRY_S):
        raise moving[-1]
    return gone[-1]


def _leave(spec: ClusterSpec, group: str, listed: list[str], timeout: float) -> set[str]:
    tls = tls_context(spec)
    host, port = find_coordinator(spec, group, timeout, tls)
    reply = request_frame(host, port, leave_group_request(2, group, listed), timeout, tls=tls)
    error, results = parse_leave_group(reply, 2)
    if error in MOVING:
        raise CoordinatorMoving(f"LeaveGroup error {error}")
    if error and error != _UNKNOWN_MEMBER_ID:
        raise ProtocolError(f"LeaveGroup error {error}")
    return {m for m in listed if results.get(m, 0) in (0, _UNKNOWN_MEMBER_ID)}


class StaleMembers:
    """Member ids left behind per (cluster, group), removed before the group is joined there
    again (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left: dict[tuple[str, str], set[str]] = {}

    def add(self, cluster: str, group: str, member: str | None) -> None:
        if member:
            with self._lock:
                self._left.setdefault((cluster, group), set()).add(member)

    def pending(self, cluster: str, group: str) -> set[str]:
        with self._lock:
            return set(self._left.get((cluster, group), ()))

    def remove(self, spec: ClusterSpec, group: str, *, timeout: float = 10.0) -> None:
        """Send the coordinator of ``group`` on ``spec``'s cluster a leave for the members left
        there; those it still knows of stay listed when that fails (tried again next time)."""
        members = self.pending(spec.name, group)
        if not members:
            return
        if "sasl" in str(spec.client_config("consumer").get("security.protocol", "")).lower():
            log.info("consumer.stale_members_kept", cluster=spec.name, group=group, members=len(members),
                     reason="the cluster's clients authenticate with SASL")  # fmt: skip
            return
        try:
            gone = remove_members(spec, group, members, timeout=timeout)
        except (OSError, ProtocolError, struct.error, ValueError) as exc:  # a broker that answers otherwise
            log.info("consumer.stale_members_kept", cluster=spec.name, group=group, members=len(members),
                     reason=str(exc))  # fmt: skip
            return
        with self._lock:
            left = self._left.get((spec.name, group), set())
            left -= gone
            if not left:
                self._left.pop((spec.name, group), None)
        log.info("consumer.stale_members_removed", cluster=spec.name, group=group, removed=len(gone))


#: The process's members left behind (every consumer of the process shares it).
STALE = StaleMembers()
