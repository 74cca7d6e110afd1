"""Following every change under a key prefix, in order, across etcd trouble: the one etcd
watch loop (the route watcher and the ledger follower run on it).

* It reads the prefix once (``on_snapshot``), then watches from the revision after that read
  and hands each event to ``on_event``; an event counts as done only when ``on_event``
  returned, so a failure in it (etcd gone while it reads more) sees the event again.
* After the connection breaks it resumes from the last revision done: a change made meanwhile
  is delivered once, not missed and not repeated. It reconnects with exponential backoff and
  jitter (tenacity), interruptible by :meth:`PrefixWatch.stop`.
* After a compaction (history it needs is gone) it reads the prefix again (``on_snapshot``
  with ``initial`` False) and watches from there.
* The gauge ``hotstandby_etcd_watches{prefix,state}`` counts the running watches of a prefix
  that are ``connected`` and those ``reconnecting``; each connection after the first counts in
  ``hotstandby_etcd_watch_reconnects_total{prefix}``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import tenacity

from hotstandby.configcenter.store import Event, KeyValue, KVStore, WatchStream
from hotstandby.errors import HotStandbyError, RevisionCompacted
from hotstandby.logs import get_logger
from hotstandby.metrics.instruments import ETCD_WATCH_RECONNECTS, ETCD_WATCHES

__all__ = ["OnEvent", "OnSnapshot", "PrefixWatch"]

log = get_logger("hotstandby.configcenter.watcher")

_POLL_S = 0.25  # how long one wait for events lasts (stop() is noticed in between)

#: ``on_snapshot(kvs, initial)``: everything under the prefix (``initial``: the first read).
OnSnapshot = Callable[[list[KeyValue], bool], None]
OnEvent = Callable[[Event], None]


class PrefixWatch:
    """Calls ``on_snapshot`` and ``on_event`` on its own thread (see the module docs)."""

    def __init__(
        self,
        store: KVStore,
        prefix: str,
        on_snapshot: OnSnapshot,
        on_event: OnEvent,
        *,
        name: str = "watch",
        max_backoff: float = 2.0,
    ) -> None:
        self._store = store
        self.prefix = prefix
        self._on_snapshot = on_snapshot
        self._on_event = on_event
        self._name = name
        self._max_backoff = max_backoff
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: WatchStream | None = None  # the open stream: stop() cancels it, ending its wait
        self._need_snapshot = True
        self._initial = True
        self._connections = 0
        self._counted: str | None = None  # this watch's state in the metrics
        #: The last store revision fully processed.
        self.revision = 0
        #: Connections re-established after the first one.
        self.reconnects = 0
        #: Reads of the whole prefix after the first one (after compactions).
        self.resyncs = 0

    def start(self, timeout: float | None = None) -> PrefixWatch:
        """Start watching. With ``timeout`` the first read happens here, retried while etcd
        does not answer for up to ``timeout`` s (then its error); without, on the thread."""
        if timeout is not None:
            tenacity.Retrying(
                retry=tenacity.retry_if_exception_type(self._store.recoverable_errors),
                wait=self._backoff(),
                stop=tenacity.stop_after_delay(timeout),
                reraise=True,
            )(self._snapshot)
        self._thread = threading.Thread(target=self._run, name=f"hotstandby-{self._name}", daemon=True)
        self._thread.start()
        log.info("watch.started", prefix=self.prefix, revision=self.revision)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; waits up to ``timeout`` s for the thread (which a cancelled stream
        ends at once, not after its wait for events)."""
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("watch.stop_timeout", prefix=self.prefix, timeout=timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _sleep(self, seconds: float) -> None:
        self._stopped.wait(seconds)  # returns early when stop() is called

    def _backoff(self) -> tenacity.wait.wait_base:
        return tenacity.wait_exponential_jitter(multiplier=0.05, max=self._max_backoff, jitter=0.05)

    def _snapshot(self) -> None:
        kvs, revision = self._store.get_prefix(self.prefix)
        self.resyncs += int(not self._initial)
        self._on_snapshot(kvs, self._initial)
        self.revision = revision
        self._need_snapshot = self._initial = False

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        stream: WatchStream | None = None
        try:
            while not self._stopped.is_set():
                if stream is None:
                    stream = self._stream = self._connect()
                    if stream is None:
                        return
                    if self._stopped.is_set():  # stop() ran before the stream was published
                        break
                try:
                    for event in stream.get(timeout=_POLL_S):
                        self._on_event(event)
                        self.revision = event.mod_revision  # done: a failure above sees it again
                except RevisionCompacted as exc:
                    # etcd reports a compacted start revision on the stream, after creating it.
                    self._compacted(exc)
                    stream.cancel()
                    stream = None
                except self._store.recoverable_errors as exc:
                    self._state("reconnecting")
                    log.warning("watch.disconnected", prefix=self.prefix, error=str(exc),
                                resume_from=self.revision + 1)  # fmt: skip
                    stream.cancel()
                    stream = None
                except Exception as exc:  # a bug: log it, back off, resume from the last revision
                    self._state("reconnecting")
                    log.exception("watch.failed", prefix=self.prefix, error=repr(exc), resume_from=self.revision + 1)
                    stream.cancel()
                    stream = None
                    self._stopped.wait(self._max_backoff)
        finally:
            if stream is not None:
                stream.cancel()
            self._state(None)
            log.info("watch.stopped", prefix=self.prefix, revision=self.revision)

    def _connect(self) -> WatchStream | None:
        """Open a stream from the next revision, reading everything first when needed."""

        def attempt() -> WatchStream:
            if self._need_snapshot:
                self._snapshot()
            try:
                return self._store.watch_prefix(self.prefix, self.revision + 1)
            except RevisionCompacted as exc:
                self._compacted(exc)
                raise

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            self._state("reconnecting")
            log.info("watch.reconnecting", prefix=self.prefix, attempt=state.attempt_number,
                     error=str(error) if error else None)  # fmt: skip

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type((*self._store.recoverable_errors, RevisionCompacted)),
            wait=self._backoff(),
            stop=tenacity.stop_when_event_set(self._stopped),
            sleep=self._sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            stream = retrying(attempt)
        except HotStandbyError:
            if self._stopped.is_set():
                return None
            raise
        if self._stopped.is_set():
            stream.cancel()
            return None
        self._connections += 1
        self.reconnects = self._connections - 1
        self._state("connected")
        if self.reconnects:
            ETCD_WATCH_RECONNECTS.inc(prefix=self.prefix)
        log.info("watch.connected", prefix=self.prefix, start_revision=self.revision + 1, reconnects=self.reconnects)
        return stream

    def _state(self, state: str | None) -> None:
        """Move this watch's count in ``hotstandby_etcd_watches`` to ``state`` (None: stopped)."""
        if self._counted == state:
            return
        if self._counted is not None:
            ETCD_WATCHES.add(-1, prefix=self.prefix, state=self._counted)
        if state is not None:
            ETCD_WATCHES.add(1, prefix=self.prefix, state=state)
        self._counted = state

    def _compacted(self, exc: RevisionCompacted) -> None:
        log.warning("watch.compacted", prefix=self.prefix, wanted=self.revision + 1, oldest=exc.compact_revision)
        self._need_snapshot = True
