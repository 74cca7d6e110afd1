"""Kafka transactions of :class:`hotstandby.adapters.kafka.Producer`, on the cluster in use.

A transaction lives on one cluster (its producer id, epoch and coordinator), so the facade's
transactional calls go to the raw producer in use, with confluent-kafka's semantics, errors
and flags. What a switch does (docs/kafka-api.md, *Transactions*):

* ``connect``: ``init_transactions`` on the new cluster with the same ``transactional.id``
  (which fences an older producer of that id there); a cluster that refuses fails the attempt.
* ``move``: a transaction the application has open cannot be committed on the new cluster. Its
  records are forgotten (never re-sent) and the application's next call raises an abortable
  error (``txn_requires_abort()``), so the usual loop — ``abort_transaction()``, begin again —
  runs the transaction anew on the new cluster. A transaction whose ``commit_transaction``
  ended without an answer (a retriable error) is *carried*: its records are re-sent with the
  replay, and the application's next ``commit_transaction`` returns as committed.
* The replay (records of committed transactions the new cluster may lack, same identity) is
  one transaction on the new cluster, committed in ``resume`` before the application's next
  transactional call runs; the transaction left open on the old cluster is aborted there if
  the old cluster answers.

``lock`` serialises the application's transactional calls with a switch's move..resume; it is
taken before the producer's lock, and never held by the delivery path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka import Producer as RawProducer

from hotstandby.adapters.kafka.producer.state import ProducerState, Record
from hotstandby.failover.probe import probe_cluster
from hotstandby.failover.switch_protocol import SwitchPlan
from hotstandby.logs import get_logger

__all__ = ["NO_OFFSETS", "Transactions", "Txn", "report_purged"]

log = get_logger("hotstandby.kafka.producer")

NO_OFFSETS = (
    "offsets committed in a transaction bypass the hotstandby consumer's ack ledger, so the "
    "records they cover would be handed out again after a switch; commit_transaction(), then "
    "commit them with the hotstandby Consumer's commit()"
)
_ERRONEOUS = "Unable to produce message: Local: Erroneous state"  # confluent-kafka's, outside a transaction
_CONNECT_TIMEOUT_S = 10.0
_OLD_ABORT_TIMEOUT_S = 5.0
_REPLAY_ATTEMPTS = 3


def _state_error(message: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._STATE, message))


class Txn:
    """One transaction of the application, from ``begin_transaction`` to its end."""

    __slots__ = ("aborting", "carried", "client", "records", "unanswered")

    def __init__(self, client: RawProducer) -> None:
        self.client = client  # the raw producer it was begun on
        self.records: list[Record] = []
        self.aborting = False  # abort_transaction() called: purge reports reach the application
        self.unanswered = False  # commit_transaction() ended with a retriable error: outcome unknown
        self.carried = ""  # the cluster a switch committed it on (with the replay)


class Transactions:
    """The transaction state of one producer (fields guarded by the producer's lock).
    ``replay(client, records)`` re-sends records in order (the producer's ``Sender``)."""

    def __init__(
        self, state: ProducerState, replay: Callable[[RawProducer, list[Record]], None], enabled: bool
    ) -> None:
        self._s = state
        self._replay = replay
        self.enabled = enabled  # transactional.id is set
        self.lock = threading.Lock()
        self.initialized = False  # the application's init_transactions() returned
        self.ready: RawProducer | None = None  # the raw producer init_transactions succeeded on
        self.current: Txn | None = None
        self.doomed: KafkaError | None = None  # the abortable error a switch left `current` with
        self._prepared: RawProducer | None = None  # initialised by connect, not in use yet
        self._replaying: RawProducer | None = None  # holds the replay transaction resume commits
        self._replayed: list[Record] = []
        self._old_open = False  # the old cluster still has the application's transaction open

    # -- the application's calls ------------------------------------------------------------

    def init_transactions(self, timeout: float) -> None:
        with self.lock:
            inner = self._s.inner
            # A switch initialises the client it moves to: the application's call finds it ready.
            if self.initialized or self.ready is not inner:
                inner.init_transactions(timeout)
            with self._s.lock:
                self.ready, self.initialized = inner, True

    def begin_transaction(self) -> None:
        with self.lock:
            with self._s.lock:
                inner = self._s.inner
                if self.doomed is not None:
                    raise KafkaException(self.doomed)  # as confluent-kafka in an abortable state
                if self.enabled and not self.initialized:  # (a switch may have initialised the client)
                    raise _state_error("Operation not valid in state Init")
                if self.current is not None and self.current.client is not inner:
                    raise _state_error("Operation not valid in state CommittingTransaction")
            inner.begin_transaction()
            with self._s.lock:
                self.current = Txn(inner)

    def for_record(self) -> Txn | None:
        """The transaction a record produced now belongs to (producer's lock held); raises as
        confluent-kafka's produce() outside a transaction."""
        if not self.enabled:
            return None
        if self.doomed is not None:
            raise KafkaException(self.doomed)
        txn = self.current
        if txn is None or txn.client is not self._s.inner or txn.carried:
            raise _state_error(_ERRONEOUS)
        return txn

    def commit_transaction(self, timeout: float) -> None:
        with self.lock:
            with self._s.lock:
                if self.doomed is not None:
                    raise KafkaException(self.doomed)
                txn, inner = self.current, self._s.inner
                if txn is not None and txn.carried:
                    self.current = None  # the switch committed it, with the replay
                    return
            try:
                inner.commit_transaction(timeout)
            except KafkaException as exc:
                if txn is not None:  # a retriable error leaves the outcome unknown (see move)
                    txn.unanswered = exc.args[0].retriable()
                raise
            with self._s.lock:
                if self.current is txn:
                    self.current = None

    def abort_transaction(self, timeout: float) -> None:
        with self.lock:
            with self._s.lock:
                txn, inner = self.current, self._s.inner
                if self.doomed is not None:
                    # Nothing open on the cluster in use: the switch aborted it on the old one.
                    self.doomed, self.current = None, None
                    unreported = [r for r in txn.records if not r.reported] if txn is not None else []
                    for record in unreported:
                        record.reported = True
                elif txn is not None and txn.carried:
                    raise _state_error(f"the transaction was committed on {txn.carried} by a switch; "
                                       "commit_transaction() completes it (docs/kafka-api.md)")  # fmt: skip
                else:
                    unreported = None
                    if txn is not None:
                        txn.aborting = True
            if unreported is not None:
                report_purged(unreported)  # as confluent-kafka's abort: the purge reports, now
                return
            inner.abort_transaction(timeout)
            with self._s.lock:
                if txn is not None:
                    self._s.outbox.forget([r.slot for r in txn.records])
                if self.current is txn:
                    self.current = None

    # -- the switch ---------------------------------------------------------------------

    def connect(self, new: RawProducer) -> None:
        """``connect``: the new cluster's transaction coordinator, for this transactional.id."""
        if self.enabled:
            new.init_transactions(_CONNECT_TIMEOUT_S)
            self._prepared = new

    def abort_connect(self) -> None:
        self._prepared = None

    def move(self, old: RawProducer, new: RawProducer, plan: SwitchPlan) -> None:
        """``move`` (producer's lock and :attr:`lock` held), before the replay is taken."""
        if not self.enabled:
            return
        self.ready = new if self._prepared is new else None
        self._prepared = None
        txn, self._old_open = self.current, False
        if txn is None:
            return
        self._old_open = True
        if txn.unanswered and not txn.aborting:
            txn.carried = plan.destination.name  # its records stay in the outbox: replayed
            return
        self.doomed = KafkaError(
            KafkaError._OUTDATED,
            f"transaction aborted: the producer moved from {plan.source.name} to {plan.destination.name} "
            f"(route {plan.target.name}, epoch {plan.target.epoch}); abort_transaction() and begin a new "
            "transaction (docs/kafka-api.md)",
            txn_requires_abort=True,
        )
        self._s.outbox.forget([r.slot for r in txn.records])

    def begin_replay(self, new: RawProducer, records: list[Record]) -> None:
        """Before the replay is sent (still in ``move``): it is one transaction."""
        if self.enabled and records:
            new.begin_transaction()  # local: no request, cannot wait
            self._replaying, self._replayed = new, records

    def resume(self, old: RawProducer | None, plan: SwitchPlan) -> bool:
        """``resume``: commit the replay, let the application's calls run, then abort the
        transaction left on the old cluster. Releases :attr:`lock` (taken in ``move``).
        Returns whether ``old`` may be closed: confluent-kafka's close() aborts an open
        transaction first and waits for it without a limit (it does not return while the old
        cluster is down); a client merely dropped does not wait."""
        try:
            client, self._replaying = self._replaying, None
            if client is not None:
                self._commit_replay(client, plan)
        finally:
            self.lock.release()
        left_open, self._old_open = self._old_open, False
        return old is None or not left_open or self._abort_on(old, plan)

    def _commit_replay(self, client: RawProducer, plan: SwitchPlan) -> None:
        records, self._replayed = self._replayed, []
        for attempt in range(1, _REPLAY_ATTEMPTS + 1):
            try:
                client.commit_transaction()
                return
            except KafkaException as exc:
                err = exc.args[0]
                log.warning("producer.replay_commit_failed", client=self._s.options.client_id, attempt=attempt,
                            cluster=plan.destination.name, error=err.str())  # fmt: skip
                if err.fatal() or attempt == _REPLAY_ATTEMPTS:
                    break
                if err.retriable():
                    continue  # commit again
                if not err.txn_requires_abort():
                    break
            try:
                # The purge reports leave the records pending: the replay takes them again.
                client.abort_transaction()
                with self._s.lock:
                    records = self._s.outbox.replay().records
                    client.begin_transaction()
                    self._replay(client, records)
            except KafkaException:
                break
        with self._s.lock:
            # Back into the window, for the next switch (a carried transaction's records leave).
            for record in records:
                self._s.outbox.refused(record.slot, record.size)
            if self.current is not None and self.current.carried:
                self.current.carried = ""
                self.doomed = KafkaError(KafkaError._OUTDATED, "transaction aborted: the switch could not commit it "
                                         f"on {plan.destination.name}", txn_requires_abort=True)  # fmt: skip
        log.error("producer.replay_failed", client=self._s.options.client_id, cluster=plan.destination.name,
                  records=len(records), note="kept in the replay window for the next switch")  # fmt: skip

    def _abort_on(self, old: RawProducer, plan: SwitchPlan) -> bool:
        """Abort the application's transaction on the old cluster, if it answers (True when
        it did). If not, it ends there with transaction.timeout.ms, or when a producer of this
        transactional.id starts there (a failback's connect does)."""
        error = "the cluster does not answer"
        if probe_cluster(plan.source, timeout=1.0).ok:
            try:
                old.abort_transaction(_OLD_ABORT_TIMEOUT_S)
                log.info("producer.old_transaction_aborted", client=self._s.options.client_id, cluster=plan.source.name)
                return True
            except KafkaException as exc:
                error = exc.args[0].str()
        log.warning("producer.old_transaction_left", client=self._s.options.client_id, cluster=plan.source.name,
                    error=error, note="it ends with the cluster's transaction timeout")  # fmt: skip
        return False

    def close(self, timeout: float) -> None:
        """As confluent-kafka's close(): abort the transaction in progress first."""
        with self._s.lock:
            txn = self.current
        if txn is None or txn.carried:
            return
        try:
            self.abort_transaction(timeout)
        except KafkaException as exc:
            log.warning("producer.close_abort_failed", client=self._s.options.client_id, error=exc.args[0].str())


def report_purged(records: list[Record]) -> None:
    """The delivery reports confluent-kafka's abort_transaction() gives the records it purged."""
    err = KafkaError(KafkaError._PURGE_QUEUE)
    for r in records:
        if r.on_delivery is not None:
            r.on_delivery(err, Message(topic=r.topic, partition=r.partition, key=r.key, value=r.value, error=err))
