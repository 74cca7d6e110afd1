"""etcd v3 :class:`KVStore` through ``pyetcd`` (the ``etcd-sdk-python`` package).

Every pyetcd and grpc error is mapped here, at the boundary, to a hotstandby error.
Two pyetcd defaults are changed on purpose:

* an endpoint that failed once is normally shunned for 300 s (``Endpoint.time_retry``), which
  would keep a watcher away from an etcd that restarted a second later; we retry after 0.5 s;
* grpc's reconnect backoff grows to 2 minutes by default; we cap it at 1 s and send
  keepalive pings so a dead peer is noticed while a call (a watch) is in flight. Not without
  one: etcd counts a ping on an idle connection as a strike (``PermitWithoutStream`` is off)
  and after three closes it with ``GOAWAY too_many_pings``, which grpc prints to stderr.

One call waits at most 2.5 s (or the store's timeout, if shorter). A write that reaches a
three-member etcd while it elects a new leader is dropped without an answer (raft drops
proposals it has no leader for), and would hold its caller for the whole timeout; the callers
that must store something try again until their own deadline, by when a new leader leads
(1 to 2 s). Reads are tried again here, within the timeout.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from hotstandby.configcenter.call_deadline import call_deadline
from hotstandby.configcenter.store import Event, KeyValue, KVStore, WatchStream
from hotstandby.errors import (
    ConfigCenterError,
    ConfigCenterUnavailable,
    MissingDependencyError,
    RevisionCompacted,
)
from hotstandby.etcd_security import EtcdSecurity
from hotstandby.settings import PLAINTEXT, Endpoint

__all__ = ["EtcdStore"]

T = TypeVar("T")

try:
    import grpc
    import pyetcd
    from pyetcd import events as etcd_events
    from pyetcd import exceptions as etcd_exc
except ImportError as exc:  # pragma: no cover - the dependency is a core requirement
    raise MissingDependencyError("the etcd client is missing: pip install etcd-sdk-python 'protobuf>=5.27.2'") from exc

_GRPC_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
]
_ENDPOINT_RETRY_S = 0.5
_READ_RETRY_FIRST_S, _READ_RETRY_MAX_S = 0.05, 0.5
_ATTEMPT_S = 2.5  # one call's deadline (see the module doc)
_LAST_CALL_S = 0.05  # a call made at or past the caller's deadline: fails at once


class _Client(pyetcd.MultiEndpointEtcd3Client):  # type: ignore[misc]  # untyped
    """pyetcd's client, whose every call reads ``self.timeout``: here the client's own bound,
    capped by the calling thread's deadline (:mod:`.call_deadline`)."""

    @property
    def timeout(self) -> float:
        at = call_deadline()
        if at is None:
            return self._bound_s
        return max(min(self._bound_s, at - time.monotonic()), _LAST_CALL_S)

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._bound_s = value


_CANCELLED = object()  # put in a watch's queue by cancel()

_UNAVAILABLE = (
    etcd_exc.ConnectionFailedError,
    etcd_exc.ConnectionTimeoutError,
    etcd_exc.NoServerAvailableError,
    etcd_exc.InternalServerError,
    etcd_exc.WatchTimedOut,
)
_UNAVAILABLE_CODES = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
}


def _map_error(exc: BaseException) -> BaseException:
    """The hotstandby error for a pyetcd/grpc error (or the error itself if not foreign)."""
    if isinstance(exc, etcd_exc.RevisionCompactedError):
        return RevisionCompacted(exc.compacted_revision)
    if isinstance(exc, grpc.RpcError):
        code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        if code in _UNAVAILABLE_CODES:
            return ConfigCenterUnavailable(f"etcd unavailable: {code.name}: {detail}")
        return ConfigCenterError(f"etcd error: {code.name}: {detail}")
    if isinstance(exc, _UNAVAILABLE):
        return ConfigCenterUnavailable(f"etcd unavailable: {type(exc).__name__}")
    if isinstance(exc, ValueError) and "failed node" in str(exc):
        return ConfigCenterUnavailable("etcd unavailable: every endpoint failed recently")
    if isinstance(exc, etcd_exc.Etcd3Exception):
        return ConfigCenterError(f"etcd error: {type(exc).__name__}: {exc}")
    return exc


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except (etcd_exc.Etcd3Exception, grpc.RpcError, ValueError) as exc:
        mapped = _map_error(exc)
        if mapped is exc:
            raise
        raise mapped from exc


class _EtcdWatch(WatchStream):
    def __init__(self, client: Any, prefix: str, start_revision: int) -> None:
        self._client = client
        self._queue: queue.Queue[Any] = queue.Queue()
        self._closed = threading.Event()
        self._failed: BaseException | None = None
        with _mapped():
            self._watch_id = client.add_watch_prefix_callback(prefix, self._queue.put, start_revision=start_revision)

    def get(self, timeout: float) -> list[Event]:
        if self._failed is not None:
            raise self._failed
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        if item is _CANCELLED:
            return []
        if isinstance(item, BaseException):
            mapped = _map_error(item)
            if mapped is item:
                mapped = ConfigCenterUnavailable(f"etcd watch failed: {item!r}")
            self._failed = mapped
            raise mapped from item
        events = []
        for ev in item.events:
            if isinstance(ev, etcd_events.DeleteEvent):
                events.append(Event("delete", ev.key.decode(errors="replace"), b"", ev.mod_revision))
            else:
                events.append(Event("put", ev.key.decode(errors="replace"), bytes(ev.value), ev.mod_revision))
        return events

    def cancel(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._queue.put(_CANCELLED)  # wakes a get() waiting meanwhile
        # A broken connection makes cancel fail too; the watch is gone with it.
        with contextlib.suppress(Exception):
            self._client.cancel_watch(self._watch_id)


def _token_expired(exc: BaseException) -> bool:
    """etcd dropped the client's auth token (a simple token lapses after 5 idle minutes)."""
    return (isinstance(exc, grpc.RpcError) and hasattr(exc, "code") and exc.code() == grpc.StatusCode.UNAUTHENTICATED
            and "token" in (exc.details() or ""))  # fmt: skip


class EtcdStore(KVStore):
    """etcd v3 over grpc. ``timeout`` bounds every call, including watch creation (one try
    of a write at most 2.5 s of it, see the module doc). With
    ``security``: TLS and a user's credentials; a lapsed auth token is renewed once per call."""

    def __init__(
        self, endpoints: Sequence[Endpoint], *, timeout: float = 5.0, security: EtcdSecurity = PLAINTEXT
    ) -> None:
        self.endpoints = tuple(endpoints)
        self._timeout = timeout
        self._security = security
        self.identity = security.user
        self._lock = threading.Lock()
        self._client: Any = None  # made on first use: authenticating is a call to etcd

    def _current(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _connect(self) -> Any:
        creds = self._security.channel_credentials()
        eps = [
            pyetcd.Endpoint(
                e.host, e.port, secure=creds is not None, creds=creds, time_retry=_ENDPOINT_RETRY_S, opts=_GRPC_OPTIONS
            )
            for e in self.endpoints
        ]
        attempt = min(self._timeout, _ATTEMPT_S)
        return _Client(endpoints=eps, timeout=attempt, failover=True,
                                               user=self._security.user, password=self._security.password)  # fmt: skip

    def call(self, fn: Callable[[Any], T]) -> T:
        """``fn(client)`` on the pyetcd client, errors mapped; again with a new auth token if
        etcd dropped ours."""
        with _mapped():
            client = self._current()
            try:
                return fn(client)
            except grpc.RpcError as exc:
                if not _token_expired(exc) or self._security.user is None:
                    raise
            with self._lock:
                if self._client is client:  # not renewed by another thread meanwhile
                    self._client = self._connect()
                    with contextlib.suppress(Exception):
                        client.close()
                client = self._client
            return fn(client)

    def read(self, fn: Callable[[Any], T]) -> T:
        """A read through :meth:`call`, tried again (on another member: pyetcd moves on from
        one that failed) while etcd is unavailable, within the store's timeout. A three-member
        etcd electing a leader answers "leader changed" for a second or so; a read is safe to
        repeat, a write is not (its first try may have been applied)."""
        deadline = time.monotonic() + self._timeout
        capped = call_deadline()
        if capped is not None:
            deadline = min(deadline, capped)
        delay = _READ_RETRY_FIRST_S
        while True:
            try:
                return self.call(fn)
            except ConfigCenterUnavailable:
                if time.monotonic() + delay >= deadline:
                    raise
            time.sleep(delay)  # bounded by the deadline: a pause between tries, not a wait for an event
            delay = min(delay * 2, _READ_RETRY_MAX_S)

    def get(self, key: str) -> KeyValue | None:
        value, meta = self.read(lambda c: c.get(key))
        if meta is None:
            return None
        return KeyValue(key, bytes(value), meta.mod_revision)

    def get_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        resp = self.read(lambda c: c.get_prefix_response(prefix, sort_order="ascend", sort_target="key"))
        kvs = [KeyValue(kv.key.decode(errors="replace"), bytes(kv.value), kv.mod_revision) for kv in resp.kvs]
        return kvs, resp.header.revision

    def put(self, key: str, value: bytes, *, lease: int = 0) -> int:
        resp = self.call(lambda c: c.put(key, value, lease=lease or None))
        return int(resp.header.revision)

    def put_if_revision(self, key: str, value: bytes, mod_revision: int, *, lease: int = 0) -> bool:
        def call(c: Any) -> bool:
            tx = c.transactions
            ok, _ = c.transaction(compare=[tx.mod(key) == mod_revision],
                                  success=[tx.put(key, value, lease=lease or None)], failure=[])  # fmt: skip
            return bool(ok)

        return self.call(call)

    def get_many(self, keys: Sequence[str]) -> dict[str, KeyValue | None]:
        def call(c: Any) -> list[Any]:
            tx = c.transactions
            _, responses = c.transaction(compare=[], success=[tx.get(key) for key in keys], failure=[])
            return list(responses)

        found: dict[str, KeyValue | None] = dict.fromkeys(keys)
        for key, kvs in zip(keys, self.read(call), strict=True):
            for value, meta in kvs:
                found[key] = KeyValue(key, bytes(value), meta.mod_revision)
        return found

    def put_all_if_revisions(self, expected: Mapping[str, int], puts: Mapping[str, bytes]) -> dict[str, int] | None:
        def call(c: Any) -> dict[str, int] | None:
            tx = c.transactions
            compare = [tx.mod(key) == revision for key, revision in expected.items()]
            ok, responses = c.transaction(compare=compare, success=[tx.put(key, value) for key, value in puts.items()],
                                          failure=[])  # fmt: skip
            if not ok:
                return None
            return {key: int(r.response_put.header.revision) for key, r in zip(puts, responses, strict=True)}

        return self.call(call)

    def commit_if_revisions(
        self, expected: Mapping[str, int], puts: Mapping[str, bytes], deletes: Sequence[str] = ()
    ) -> bool:
        def call(c: Any) -> bool:
            tx = c.transactions
            compare = [tx.mod(key) == revision for key, revision in expected.items()]
            success = [tx.put(key, value) for key, value in puts.items()] + [tx.delete(key) for key in deletes]
            ok, _ = c.transaction(compare=compare, success=success, failure=[])
            return bool(ok)

        return self.call(call)

    def delete(self, key: str) -> bool:
        return self.call(lambda c: bool(c.delete(key)))

    def watch_prefix(self, prefix: str, start_revision: int) -> WatchStream:
        return self.call(lambda c: _EtcdWatch(c, prefix, start_revision))

    def grant_lease(self, ttl_s: int) -> int:
        return self.call(lambda c: int(c.lease(ttl_s).id))

    def refresh_lease(self, lease_id: int) -> bool:
        responses = self.call(lambda c: list(c.refresh_lease(lease_id)))
        return bool(responses) and responses[-1].TTL > 0

    def revoke_lease(self, lease_id: int) -> None:
        def call(c: Any) -> None:
            try:
                c.revoke_lease(lease_id)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:  # already gone: nothing to revoke
                    raise

        self.call(call)

    def compact(self, revision: int) -> None:
        self.call(lambda c: c.compact(revision, physical=True))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
