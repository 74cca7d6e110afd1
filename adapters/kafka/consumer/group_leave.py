"""Leaving a consumer group one member at a time, each when the group is settled.

When a switch moves every member of a group to another cluster, all of them leave the old
cluster's group at about the same moment, and a member leaves while the group is still
rebalancing after another one's departure. Kafka copes; the reference broker (Tansu) keeps the
departed leader of that half-formed generation, and nobody can join the group again. Leaving
in turn — under a lock in the config center, once the group is stable, releasing the lock once
the rest has settled again — costs a few seconds in the background and works everywhere.

Joining races leaving just as badly there: members that join a group while another member's
leave is under way may never get an assignment (2 runs of 9 with raw consumers on the
reference broker; none of 8 when they joined after the leaves). A member about to leave
therefore marks its pending leave in the config center (:class:`PendingLeaves`), and a member
about to join waits until no leave of that group on that cluster is pending.

A consumer that closes leaves the same way, but only its turn and the leave itself happen on
the caller's thread (:meth:`GroupLeaves.close`). When nobody else is leaving — the usual close,
also with other members that go on, or that do not poll — the lock is free and the group
stable: a few etcd round trips and the broker's leave. The wait for the rest of the group to
settle again, before the lock and the mark are released, goes on in a thread that ends within
the leave timeout and before the process exits (a member closing next waits for it, serving the
group's rebalance meanwhile). A cluster that does not answer is left at once: librdkafka's
close waits for the commits it has in flight — up to ``session.timeout.ms``, 45 s by default,
when the coordinator is gone — and that wait goes on in the background (what those commits
carry is in the ledgers already).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

from confluent_kafka import KafkaException

from hotstandby.adapters.kafka.consumer.raw_close import close_within
from hotstandby.adapters.kafka.consumer.stale_members import STALE
from hotstandby.adapters.kafka.wire.group_state import UNSUPPORTED, group_state
from hotstandby.configcenter import ConfigCenter
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.configcenter.leased import LeasedKey, leased_values
from hotstandby.configcenter.lock import StoreLock, center_lock
from hotstandby.configcenter.polling import wait_until
from hotstandby.configcenter.sharing import SharedCenter
from hotstandby.errors import ConfigCenterError
from hotstandby.logs import get_logger

__all__ = ["GroupLeaves", "PendingLeaves", "leave_in_turn"]

log = get_logger("hotstandby.kafka.consumer")

_SETTLED = frozenset({"Stable", "Empty", "Dead"})
# How long closing a consumer of a cluster that does not answer waits for librdkafka (whose
# close returns at once unless commits are in flight, and those cannot reach that cluster).
_GONE_CLOSE_S = 0.5

#: What is left of a leave once the consumer left: the wait for the group to settle, the release.
Remainder = Callable[[], None]


class PendingLeaves:
    """The members about to leave ``group`` on ``cluster``: one key each, under
    ``<ns>/locks/leaving/<cluster>/<group>/``, held by a lease (a member that dies while
    leaving stops counting after ``ttl_s``)."""

    def __init__(self, center: ConfigCenter, cluster: str, group: str, *, ttl_s: int = 30) -> None:
        self._center = center
        self._prefix = center.keys.lock(f"leaving/{quote(cluster, safe='')}/{quote(group, safe='')}/")
        self._ttl_s = ttl_s

    def mark(self, member: str) -> LeasedKey:
        """``member`` will leave; returns the mark to pass to :meth:`unmark` once it left."""
        mark = LeasedKey(self._center, self._prefix + quote(member, safe=""), ttl_s=self._ttl_s)
        mark.write(b"")
        return mark

    def unmark(self, mark: LeasedKey) -> None:
        with contextlib.suppress(ConfigCenterError):  # it expires on its own after the TTL
            mark.release()

    def pending(self) -> list[str]:
        found = leased_values(self._center, self._prefix)
        return [unquote(kv.key[len(self._prefix) :]) for kv in found]

    def wait_none(self, timeout: float) -> list[str]:
        """Wait (at most ``timeout`` s) until no leave is pending; the members still leaving."""
        left: list[str] = []

        def none_left() -> bool:
            left[:] = self.pending()
            return not left

        wait_until(none_left, timeout, first=0.05, most=0.2)
        return left


def _settled(spec: ClusterSpec, group: str) -> bool | None:
    """Whether the group is stable or empty; None when the cluster does not answer. Asked on
    plain sockets (group_state): librdkafka's admin requests to a group coordinator abort the
    process now and then."""
    state = group_state(spec, group, timeout=1.0)
    if state is None:
        return None
    return state in _SETTLED or state == UNSUPPORTED  # one we cannot ask about is not waited for


def leave_in_turn(
    raw: Any,
    *,
    spec: ClusterSpec,
    group: str,
    lock: StoreLock | None,
    timeout: float,
    harmless: Callable[[], None] | None = None,
) -> Remainder:
    """Close ``raw`` (a confluent_kafka.Consumer) once it is its turn; records it still
    fetches meanwhile are dropped unprocessed. Returns what is left to do (never longer than
    ``timeout`` s from the call, all included): wait until the rest of the group has settled,
    then release ``lock``. ``harmless`` is called at once when the cluster does not answer: its
    group went with it, so joins need not wait for this leave, and nothing is left to do."""
    deadline = time.monotonic() + timeout
    if _settled(spec, group) is None:
        if harmless is not None:
            harmless()
        STALE.add(spec.name, group, _member_id(raw))  # removed there before we join again
        close_within(raw, group, _GONE_CLOSE_S)
        return lambda: None
    held = False
    try:
        if lock is not None:
            held = _await_turn(raw, spec, group, lock, deadline)
        close_within(raw, group, max(deadline - time.monotonic(), _GONE_CLOSE_S))
    except BaseException:
        if held and lock is not None:
            lock.release()
        raise
    return functools.partial(_release_when_settled, spec, group, lock if held else None, deadline, timeout)


def _member_id(raw: Any) -> str | None:
    try:
        return str(raw.memberid() or "") or None
    except (KafkaException, RuntimeError):
        return None


def _await_turn(raw: Any, spec: ClusterSpec, group: str, lock: StoreLock, deadline: float) -> bool:
    """Wait for ``lock``, then for the group to be settled, serving the group's rebalances
    meanwhile (so the others can settle); whether the lock is held."""
    held = False
    while time.monotonic() < deadline:
        try:
            held = lock.try_acquire()
        except ConfigCenterError as exc:
            log.warning("consumer.leave_lock_failed", group=group, error=str(exc))
            return False
        if held:
            break
        raw.poll(0.1)
    while held and _settled(spec, group) is False and time.monotonic() < deadline:
        raw.poll(0.1)
    return held


def _release_when_settled(
    spec: ClusterSpec, group: str, lock: StoreLock | None, deadline: float, timeout: float
) -> None:
    """Once the rest of the group has settled after our leave (or at ``deadline``), release ``lock``."""
    try:
        if lock is not None:
            wait_until(lambda: _settled(spec, group) is not False, deadline - time.monotonic(), first=0.1,
                       most=0.1)  # fmt: skip
    finally:
        if lock is not None:
            lock.release()
    if time.monotonic() >= deadline:
        log.warning("consumer.leave_slow", group=group, timeout_s=timeout)


class GroupLeaves:
    """One consumer's leaves and joins of ``group`` on the clusters it moves between: marks its
    leave as pending, leaves in turn, and joins only once no leave is pending there.
    ``hold``: another hold on the config center, for leaves that go on after the consumer
    closed (by default they use ``center`` as it is)."""

    def __init__(
        self,
        center: ConfigCenter,
        group: str,
        *,
        member: str,
        timeout_s: float,
        hold: Callable[[], SharedCenter] | None = None,
    ) -> None:
        self._center = center
        self.group = group
        self.member = member
        self.timeout_s = timeout_s
        self._hold = hold

    def _pending(self, spec: ClusterSpec) -> PendingLeaves:
        return PendingLeaves(self._center, spec.name, self.group, ttl_s=int(self.timeout_s) + 5)

    def mark(self, spec: ClusterSpec) -> LeasedKey | None:
        """Tell members about to join ``spec``'s group that we are leaving it; the lease."""
        try:
            return self._pending(spec).mark(self.member)
        except ConfigCenterError as exc:
            log.warning("consumer.leave_mark_failed", cluster=spec.name, group=self.group, error=str(exc))
            return None

    def await_none(self, spec: ClusterSpec) -> None:
        """Join ``spec``'s group only once no member is leaving it (joins racing leaves can
        wedge a group on the reference broker: see the module doc)."""
        started = time.monotonic()
        try:
            left = self._pending(spec).wait_none(self.timeout_s)
        except ConfigCenterError as exc:
            log.warning("consumer.leaves_unknown", cluster=spec.name, group=self.group, error=str(exc))
            return
        waited_ms = round((time.monotonic() - started) * 1000)
        if left:
            log.warning("consumer.joining_while_leaving", cluster=spec.name, group=self.group, members=left,
                        waited_ms=waited_ms)  # fmt: skip
        elif waited_ms >= 100:
            log.info("consumer.waited_for_leaves", cluster=spec.name, group=self.group, waited_ms=waited_ms)

    def leave_in_background(self, raw: Any, spec: ClusterSpec) -> None:
        """Leave ``spec``'s group in turn on a thread of its own (a switch gave ``raw`` up); the
        leave is marked pending before this returns."""
        marked = self.mark(spec)

        def leave() -> None:  # all of it, in the background
            self._leave(raw, spec, marked)()

        self._in_background(leave, spec)

    def close(self, raw: Any, spec: ClusterSpec) -> None:
        """Leave ``spec``'s group in turn and return once ``raw`` left it; the wait for the
        rest of the group to settle goes on in the background (see the module doc)."""
        self._in_background(self._leave(raw, spec, self.mark(spec)), spec)

    def _leave(self, raw: Any, spec: ClusterSpec, marked: LeasedKey | None) -> Remainder:
        """Leave in turn; what is left: the wait for the group to settle, the release of the
        lock, then of the mark."""
        lock = center_lock(self._center, f"leave/{spec.name}/{self.group}", owner=self.member, ttl_s=30)
        leaves = self._pending(spec)

        def unmark() -> None:  # harmless twice: the mark's lease is revoked once
            if marked is not None:
                leaves.unmark(marked)

        try:
            settle = leave_in_turn(raw, spec=spec, group=self.group, lock=lock, timeout=self.timeout_s,
                                   harmless=unmark)  # fmt: skip
        except BaseException:
            unmark()
            raise

        def remainder() -> None:
            try:
                settle()
            finally:
                unmark()

        return remainder

    def _in_background(self, work: Callable[[], object], spec: ClusterSpec) -> None:
        """Run ``work`` on a thread that holds the config center open and that the process
        waits for before it exits (``work`` ends within the leave timeout)."""
        hold = self._hold() if self._hold is not None else None

        def run() -> None:
            try:
                work()
            except Exception as exc:  # nothing to raise to: the mark and the lock expire on their own
                log.warning("consumer.leave_failed", cluster=spec.name, group=self.group, error=repr(exc))
            finally:
                if hold is not None:
                    hold.close()

        threading.Thread(target=run, name=f"hotstandby-leave-{spec.name}", daemon=False).start()
