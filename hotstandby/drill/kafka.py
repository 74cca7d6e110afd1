"""The Kafka drill: SDK producer and consumers on a fresh topic of the reference cluster while
the route flips between kafka-a and kafka-b (once after a SIGKILL of the active broker)."""

from __future__ import annotations

import functools
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hotstandby.configcenter import ConfigCenter
from hotstandby.drill.report import DrillReport, SwitchReport
from hotstandby.drill.tally import SwitchMark, Tally
from hotstandby.errors import HotStandbyError
from hotstandby.logs import get_logger
from hotstandby.presence import list_clients
from hotstandby.refcluster import RefCluster

__all__ = ["DrillOptions", "DrillProgress", "run_kafka_drill"]

log = get_logger("hotstandby.drill")

ROUTE = "orders"
# What the reference cluster sustains: its replicator copies about 2 300 records/s, and the
# one-record produce requests Tansu needs (see refcluster.py) cost it a request each; offered
# faster, replication lags by minutes and a flip back re-sends tens of thousands of records at
# once, which Tansu answers only after librdkafka's request timeout.
MAX_PACE = 2000.0
PARTITIONS = 4  # what Tansu creates by itself when a restarted, empty broker is asked for the topic


@dataclass(frozen=True)
class DrillOptions:
    messages: int = 20_000
    switches: int = 2
    kill_primary: bool = False
    consumers: int = 2
    rate: int | None = None  # records/s offered; None: spread over ~6 s per phase, at most MAX_PACE

    @property
    def pace(self) -> float:
        """Records per second the producer offers, so that the flips fall mid-stream."""
        if self.rate is not None:
            return float(self.rate)
        return min(MAX_PACE, self.messages / (6.0 * (self.switches + 1)))

    timeout_s: float = 600.0  # the whole drill, after which it reports what it has
    settle_s: float = 5.0  # after everything was consumed: how long to watch for duplicates


@dataclass(frozen=True)
class DrillProgress:
    produced: int
    consumed: int
    total: int
    switches_done: int
    phase: str


class DrillFailed(HotStandbyError):
    """The drill could not run (not: it ran and found losses — that is in the report)."""


class _Clients:
    """Threads running the SDK clients; the first error stops the drill."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []
        self.filtered: dict[str, int] = {}
        self.resent = 0
        self.replicated = 0

    def start(self, name: str, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                log.error("drill.client_failed", client=name, error=repr(exc))
                self.errors.append(exc)
                self.stop.set()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.1))


def _create_topic(url: str, topic: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    from hotstandby.adapters.kafka.admin_clients import shared_admin

    admin = shared_admin(url)  # never freed: see adapters/kafka/admin_clients.py
    try:
        new = NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)
        admin.create_topics([new], request_timeout=10)[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def run_kafka_drill(
    rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None
) -> DrillReport:
    """Run the drill on the (running) reference cluster ``rc``; see the module doc."""
    from hotstandby.adapters.kafka import Consumer, Producer

    run = uuid.uuid4().hex[:8]
    namespace = f"{rc.namespace.rstrip('/')}-drill/{run}"
    topic = f"drill-{run}"
    rc.register(namespace)
    for broker in ("kafka-a", "kafka-b"):
        _create_topic(rc.url(broker), topic)
    base = {"hotstandby.route": ROUTE, "hotstandby.etcd": f"127.0.0.1:{rc.ports.etcd}",
            "hotstandby.namespace": namespace}  # fmt: skip
    tally = Tally()
    clients = _Clients()
    started = time.monotonic()
    deadline = started + options.timeout_s
    producing_done = threading.Event()

    def produce() -> None:
        producer = Producer({**base, "hotstandby.client.id": "drill-producer"})
        try:
            began = time.monotonic()
            for seq in range(options.messages):
                value = str(seq).encode()
                if options.pace > 0 and seq % 10 == 0:
                    ahead = began + seq / options.pace - time.monotonic()
                    if ahead > 0:
                        clients.stop.wait(ahead)  # pacing, so that the flips fall mid-stream

                def report(err: Any, msg: Any, seq: int = seq) -> None:
                    tally.delivered(seq, err is None)
                    if err is not None:
                        log.warning("drill.delivery_failed", seq=seq, error=str(err))

                while not clients.stop.is_set():
                    try:
                        producer.produce(topic, value=value, key=value, on_delivery=report)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
                if clients.stop.is_set():
                    return
            while producer.flush(1.0) > 0:
                if time.monotonic() > deadline or clients.stop.is_set():
                    raise DrillFailed(f"producer: {len(producer)} records still undelivered at the deadline")
        finally:
            clients.resent = producer.resent
            clients.replicated = producer.trimmed
            producer.close()
            producing_done.set()

    def consume(index: int, manual: bool) -> None:
        name = f"drill-consumer-{index}"
        config = {**base, "group.id": f"drill-{run}", "hotstandby.client.id": name, "auto.commit.interval.ms": 200}
        if manual:
            config["enable.auto.commit"] = False
        consumer = Consumer(config)
        pending: list[Any] = []
        rnd = random.Random(index)

        def commit_pending(*_: Any) -> None:
            # Out of order: each record is committed on its own, in a shuffled order.
            rnd.shuffle(pending)
            for msg in pending:
                consumer.commit(message=msg, asynchronous=False)
            tally.acknowledged([int(m.value()) for m in pending])
            pending.clear()

        try:
            consumer.subscribe([topic], on_revoke=commit_pending if manual else None)
            batch = rnd.randint(1, 20)
            while not clients.stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None and pending:
                    commit_pending()  # idle: nothing more to batch with
                if msg is None or msg.error() is not None:
                    continue
                seq = int(msg.value())
                tally.received(seq, consumer.cluster)
                if not manual:
                    tally.acknowledged([seq])
                    continue
                pending.append(msg)
                if len(pending) >= batch:
                    commit_pending()
                    batch = rnd.randint(1, 20)
            if manual and pending:
                commit_pending()
        finally:
            clients.filtered[name] = consumer.filtered
            consumer.close()

    def report_progress(phase: str) -> None:
        if progress is not None:
            produced, consumed = tally.counts()
            progress(DrillProgress(produced, consumed, options.messages, len(tally.switches), phase))

    def wait_until(condition: Callable[[], bool], phase: str, limit: float) -> bool:
        end = min(deadline, time.monotonic() + limit)
        while not condition():
            if clients.stop.is_set() or time.monotonic() > end:
                return False
            report_progress(phase)
            time.sleep(0.2)
        return True

    center = ConfigCenter.open(replace(rc.settings(), namespace=namespace))
    try:
        for i in range(options.consumers):
            clients.start(f"drill-consumer-{i}", functools.partial(consume, i, manual=i == options.consumers - 1))
        clients.start("drill-producer", produce)
        restart: str | None = None
        wait_until(lambda: tally.counts()[1] > 0, "starting", 120)
        for k in range(options.switches):
            milestone = options.messages * (k + 1) // (options.switches + 1)
            wait_until(functools.partial(_reached, tally, milestone, producing_done), "producing", 600)
            if restart is not None:
                _restart(rc, restart, topic)
                restart = None
            route = center.route(ROUTE)
            target = next(c for c in route.clusters if c != route.active)
            kill = options.kill_primary and k == 0
            if kill:
                rc.kill(route.active)
                restart = route.active
            center.switch(ROUTE, target, reason=f"hotstandby drill, switch {k + 1}")
            mark = tally.flip(route.active, target, killed=kill)
            log.info("drill.flipped", source=route.active, to=target, killed=kill)
            _wait_moved(center, mark, wait_until, lambda: producing_done.is_set() and not tally.lost())
        if restart is not None:
            _restart(rc, restart, topic)
        wait_until(producing_done.is_set, "producing", options.timeout_s)
        wait_until(lambda: not tally.lost(), "consuming", options.timeout_s)
        # Watch a while longer: copies and redeliveries that arrive late must be filtered too.
        settle_end = time.monotonic() + options.settle_s
        wait_until(lambda: time.monotonic() >= settle_end, "settling", options.settle_s + 1)
    finally:
        clients.stop.set()
        clients.join(60)
        center.close()
    if clients.errors:
        raise DrillFailed(f"a drill client failed: {clients.errors[0]!r}") from clients.errors[0]
    lost = tally.lost()
    return DrillReport(
        system="kafka",
        produced=len(tally.produced),
        consumed=len(tally.consumed & tally.produced),
        lost=len(lost),
        duplicated=tally.duplicated,
        redelivered=tally.redelivered,
        filtered=sum(clients.filtered.values()),
        resent=clients.resent,
        replicated=clients.replicated,
        failed_deliveries=len(tally.failed - tally.produced),
        consumers=options.consumers,
        seconds=round(time.monotonic() - started, 1),
        switches=[SwitchReport(m.source, m.to, m.latency_ms, m.killed) for m in tally.switches],
        lost_sample=lost[:20],
        namespace=namespace,
        topic=topic,
    )


def _reached(tally: Tally, milestone: int, done: threading.Event) -> bool:
    return tally.counts()[0] >= milestone or done.is_set()


def _wait_moved(
    center: ConfigCenter, mark: SwitchMark, wait_until: Callable[..., bool], finished: Callable[[], bool]
) -> None:
    """Until every drill client is active on the new cluster and a record was consumed there
    (or everything was consumed already)."""

    def moved() -> bool:
        docs = list_clients(center, ROUTE)
        return (mark.first_consumed is not None or finished()) and all(
            d.get("cluster") == mark.to and d.get("state") == "active" for d in docs
        )

    if not wait_until(moved, f"switching to {mark.to}", 120):
        log.warning("drill.switch_slow", to=mark.to)


def _restart(rc: RefCluster, broker: str, topic: str) -> None:
    """Bring the killed broker back empty and provision the drill's topic on it again, as an
    SRE rebuilding a lost cluster would (replication only creates the remote copies)."""
    waited = rc.restart(broker)
    _create_topic(rc.url(broker), topic)
    log.info("drill.restarted", broker=broker, empty=True, waited_s=round(waited, 2))
