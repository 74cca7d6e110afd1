"""The drill, whatever the messaging system: a producer and M consumers of the SDK run in
threads on a fresh topic of the reference cluster while the route flips between the two
clusters of that system (the first flip after a SIGKILL of the active broker, with
``kill_primary``); a :class:`Tally` counts every record and the report says what was lost or
duplicated. A :class:`Workload` supplies the system's part: its topic, its clients, and what
it does around each flip (the Spark drill kills and restarts its driver there)."""

from __future__ import annotations

import functools
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from hotstandby.configcenter import ConfigCenter, polling
from hotstandby.drill.report import DrillReport, SwitchReport, Timeline
from hotstandby.drill.tally import SwitchMark, Tally
from hotstandby.errors import HotStandbyError
from hotstandby.etcd_security import etcd_security_args
from hotstandby.failover.presence import list_clients
from hotstandby.logs import get_logger
from hotstandby.refcluster import RefCluster
from hotstandby.settings import Settings

__all__ = [
    "MAX_PACE",
    "ClientThreads",
    "DrillContext",
    "DrillFailed",
    "DrillOptions",
    "DrillProgress",
    "Workload",
    "new_run_id",
    "run_drill",
]

log = get_logger("hotstandby.drill")

# What the reference cluster sustains: its Kafka replicator copies about 2 300 records/s, and
# the one-record produce requests Tansu needs (see refcluster.py) cost it a request each;
# offered faster, replication lags by minutes and a flip back re-sends tens of thousands of
# records at once, which Tansu answers only after librdkafka's request timeout.
MAX_PACE = 2000.0


@dataclass(frozen=True)
class DrillOptions:
    messages: int = 20_000
    switches: int = 2
    kill_primary: bool = False
    consumers: int = 2
    rate: int | None = None  # records/s offered; None: spread over ~phase_s per phase, at most MAX_PACE
    phase_s: float = 6.0  # without a rate: seconds of producing before each flip and after the last
    # The whole drill, after which it reports what it has. 100 000-record failback drills take
    # 500-620 s on the reference broker (one record per produce request: docs/refcluster.md).
    timeout_s: float = 900.0
    settle_s: float = 5.0  # after everything was consumed: how long to watch for duplicates
    # The route a drill of an integration reads (spark: see systems.ROUTES); None: its default.
    # A messaging system's drill has its own route and takes no other.
    route: str | None = None
    # The Spark drill's query runs on this master (spark://HOST:PORT); None: local[2].
    spark_master: str | None = None
    # The Spark drill's query writes through the hotstandby sink; an SDK consumer counts.
    spark_pipeline: bool = False
    # The producer stops at each flip's share of the records until that flip is made, so every
    # phase is produced on its own cluster however long a flip takes to follow (Spark's).
    lockstep: bool = False
    # Settings every Kafka consumer of the drill adds to its own (``group.protocol``, ...).
    kafka_consumer: Mapping[str, str] = field(default_factory=dict)

    def milestone(self, k: int) -> int:
        """Records produced before flip ``k`` (0-based) is made."""
        return self.messages * (k + 1) // (self.switches + 1)

    @property
    def pace(self) -> float:
        """Records per second the producer offers, so that the flips fall mid-stream."""
        if self.rate is not None:
            return float(self.rate)
        return min(MAX_PACE, self.messages / (self.phase_s * (self.switches + 1)))


@dataclass(frozen=True)
class DrillProgress:
    produced: int
    consumed: int
    total: int
    switches_done: int
    phase: str


class DrillFailed(HotStandbyError):
    """The drill could not run (not: it ran and found losses — that is in the report)."""


@dataclass
class DrillContext:
    """What the workload's client threads share with the runner."""

    options: DrillOptions
    run: str  # this run's id (names the topic and the group)
    namespace: str  # the config center namespace of this run's routes and ledgers
    etcd_config: dict[str, str]  # the clients' hotstandby.etcd* keys (endpoint; TLS and credentials)
    deadline: float
    tally: Tally = field(default_factory=Tally)
    stop: threading.Event = field(default_factory=threading.Event)
    producing_done: threading.Event = field(default_factory=threading.Event)
    filtered: dict[str, int] = field(default_factory=dict)  # per consumer
    resent: int = 0
    replicated: int = 0
    #: cleared by a workload to hold the producer back (until the deadline at most)
    producing: threading.Event = field(default_factory=threading.Event)
    held_s: float = 0.0
    # Set while a killed broker is restarted (seconds on the real systems): the records due
    # meanwhile wait, so that the flips after it still fall mid-stream.
    restarting: threading.Event = field(default_factory=threading.Event)
    allowed: int | None = None  # lockstep: records the producer may send before the next flip

    def _may_send(self, seq: int) -> bool:
        allowed = self.allowed
        return self.producing.is_set() and not self.restarting.is_set() and (allowed is None or seq < allowed)

    def __post_init__(self) -> None:
        self.producing.set()

    @property
    def etcd(self) -> str:
        """The reference etcd's endpoint."""
        return self.etcd_config["hotstandby.etcd"]

    def settings(self) -> Settings:
        """The clients' settings for this run's namespace (the ``app`` user on a secure cluster)."""
        return Settings.resolve(etcd=self.etcd, namespace=self.namespace, environ={},
                                **etcd_security_args(self.etcd_config, "hotstandby."))  # fmt: skip

    def pace(self, began: float, seq: int, serve: Callable[[float], object] | None = None) -> None:
        """Wait until record ``seq`` is due (so that the flips fall mid-stream), and while a
        workload or the lockstep holds the producer back (the time held does not count); a
        producer that must be polled for its delivery reports passes its ``poll`` as ``serve``."""
        if not self._may_send(seq):
            since = time.monotonic()
            while not self._may_send(seq) and not self.stop.is_set() and time.monotonic() < self.deadline:
                if serve is None:
                    self.stop.wait(0.1)
                else:
                    serve(0.1)
            self.held_s += time.monotonic() - since
        pace = self.options.pace
        if pace > 0 and seq % 10 == 0:
            ahead = began + self.held_s + seq / pace - time.monotonic()
            if ahead > 0:
                self.stop.wait(ahead)


class Workload(Protocol):
    system: str
    route: str
    run: str  # this run's id (from new_run_id)
    topic: str
    phase: str  # what the drill exercises, when the system's drill has several parts ("" otherwise)

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        """Make the topic on both clusters (and whatever else the system needs)."""
        ...

    def produce(self, ctx: DrillContext) -> None:
        """Produce ``ctx.options.messages`` records (``tally.delivered`` each); a thread."""
        ...

    def consume(self, ctx: DrillContext, index: int) -> None:
        """One consumer until ``ctx.stop`` (``tally.received`` / ``acknowledged``); a thread."""
        ...

    def restarted(self, rc: RefCluster, broker: str) -> None:
        """``broker`` came back empty after its SIGKILL: provision the topic again."""
        ...

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        """The runner is about to flip the route for the ``k``-th time (from 0): the broker
        kill, if any, comes after this."""
        ...

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        """The ``k``-th flip is written; the runner waits for the clients to move next."""
        ...


class ClientThreads:
    """The client threads; the first error stops the drill."""

    def __init__(self, ctx: DrillContext) -> None:
        self.ctx = ctx
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def start(self, name: str, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                log.error("drill.client_failed", client=name, error=repr(exc))
                self.errors.append(exc)
                self.ctx.stop.set()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.1))


def run_drill(
    rc: RefCluster, options: DrillOptions, workload: Workload, progress: Callable[[DrillProgress], None] | None = None
) -> DrillReport:
    """Run ``workload``'s drill on the (running) reference cluster ``rc``; see the module doc."""
    started = time.monotonic()
    namespace = f"{rc.namespace.rstrip('/')}-drill/{workload.run}"
    rc.register(namespace)
    ctx = DrillContext(options, workload.run, namespace, rc.client_config("app"), started + options.timeout_s)
    workload.prepare(rc, ctx)
    tally = ctx.tally
    threads = ClientThreads(ctx)

    def produce() -> None:
        try:
            workload.produce(ctx)
        finally:
            ctx.producing_done.set()

    def report_progress(phase: str) -> None:
        if progress is not None:
            produced, consumed = tally.counts()
            progress(DrillProgress(produced, consumed, options.messages, len(tally.switches), phase))

    def wait_until(condition: Callable[[], bool], phase: str, limit: float) -> bool:
        def met_or_stopped() -> bool:
            if condition():
                return True
            report_progress(phase)
            return ctx.stop.is_set()

        end = min(ctx.deadline, time.monotonic() + limit)
        return polling.wait_until(met_or_stopped, end - time.monotonic(), first=0.2, most=0.2) and condition()

    center = ConfigCenter.open(replace(rc.settings("sre"), namespace=namespace))  # who flips routes
    try:
        for i in range(options.consumers):
            threads.start(f"drill-consumer-{i}", functools.partial(workload.consume, ctx, i))
        threads.start("drill-producer", produce)
        restart: str | None = None
        if options.lockstep and options.switches:
            ctx.allowed = options.milestone(0)
        wait_until(lambda: tally.counts()[1] > 0, "starting", 120)
        for k in range(options.switches):
            milestone = options.milestone(k)
            wait_until(functools.partial(_reached, ctx, milestone), "producing", 600)
            if restart is not None:
                _restart(rc, workload, restart, ctx)
                restart = None
            workload.before_flip(k, ctx)
            route = center.route(workload.route)
            target = next(c for c in route.clusters if c != route.active)
            kill = options.kill_primary and k == 0
            if kill:
                rc.kill(route.active)
                tally.event("kill", route.active)
                restart = route.active
            center.switch(workload.route, target, reason=f"hotstandby drill, switch {k + 1}")
            mark = tally.flip(route.active, target, killed=kill)
            if options.lockstep:  # the next share, on the new cluster
                ctx.allowed = options.milestone(k + 1) if k + 1 < options.switches else None
            log.info("drill.flipped", source=route.active, to=target, killed=kill)
            workload.after_flip(k, ctx)
            _wait_moved(center, workload.route, mark, wait_until, functools.partial(_finished, ctx))
        if restart is not None:
            _restart(rc, workload, restart, ctx)
        wait_until(ctx.producing_done.is_set, "producing", options.timeout_s)
        if not wait_until(lambda: not tally.lost(), "consuming", options.timeout_s):
            log.warning("drill.incomplete", missing=len(tally.lost()), sample=tally.lost()[:10],
                        clients=_client_stacks(threads.threads))  # fmt: skip
        # Watch a while longer: copies and redeliveries that arrive late must be filtered too.
        settle_end = time.monotonic() + options.settle_s
        wait_until(lambda: time.monotonic() >= settle_end, "settling", options.settle_s + 1)
    finally:
        ctx.stop.set()
        threads.join(60)
        center.close()
    if threads.errors:
        error = threads.errors[0]
        raise DrillFailed(f"a drill client failed: {type(error).__name__}: {error}") from error
    lost = tally.lost()
    return DrillReport(
        system=workload.system,
        produced=len(tally.produced),
        consumed=len(tally.consumed & tally.produced),
        lost=len(lost),
        duplicated=tally.duplicated,
        redelivered=tally.redelivered,
        filtered=sum(ctx.filtered.values()),
        resent=ctx.resent,
        replicated=ctx.replicated,
        failed_deliveries=len(tally.failed - tally.produced),
        consumers=options.consumers,
        seconds=round(time.monotonic() - started, 1),
        switches=[
            SwitchReport(m.source, m.to, m.latency_ms, m.killed, m.duplicated, round(m.at - tally.started, 2))
            for m in tally.switches
        ],
        timeline=Timeline(dict(tally.per_second), list(tally.events)),
        lost_sample=lost[:20],
        duplicated_sample=list(tally.duplicated_sample),
        namespace=namespace,
        topic=workload.topic,
        phase=workload.phase,
    )


def _client_stacks(threads: list[threading.Thread]) -> dict[str, list[str]]:
    """Where each client thread still running is (its innermost frames): why a drill stalls."""
    frames = sys._current_frames()
    out = {}
    for thread in threads:
        frame = frames.get(thread.ident) if thread.ident is not None else None
        if frame is not None:
            stack = traceback.extract_stack(frame)[-6:]
            out[thread.name] = [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}" for f in stack]
    return out


def _reached(ctx: DrillContext, milestone: int) -> bool:
    return ctx.tally.counts()[0] >= milestone or ctx.producing_done.is_set()


def _finished(ctx: DrillContext) -> bool:
    return ctx.producing_done.is_set() and not ctx.tally.lost()


def new_run_id() -> str:
    """A fresh id for a run: names its topic, group and config center namespace."""
    return uuid.uuid4().hex[:8]


def _wait_moved(
    center: ConfigCenter, route: str, mark: SwitchMark, wait_until: Callable[..., bool], finished: Callable[[], bool]
) -> None:
    """Until every drill client is active on the new cluster and a record was consumed there
    (or everything was consumed already)."""

    def moved() -> bool:
        docs = list_clients(center, route)
        return (mark.first_consumed is not None or finished()) and all(
            d.get("cluster") == mark.to and d.get("state") == "active" for d in docs
        )

    if not wait_until(moved, f"switching to {mark.to}", 120):
        log.warning("drill.switch_slow", to=mark.to)


def _restart(rc: RefCluster, workload: Workload, broker: str, ctx: DrillContext) -> None:
    """Bring the killed broker back (the lite Kafka brokers empty, the others with their data)
    and provision the drill's topic on it again, as an SRE rebuilding a lost cluster would
    (replication only creates the remote copies). The producer waits meanwhile."""
    ctx.restarting.set()
    try:
        waited = rc.restart(broker)
        ctx.tally.event("restart", broker)
        began = time.monotonic()
        workload.restarted(rc, broker)
    finally:
        ctx.restarting.clear()
    log.info(
        "drill.restarted", broker=broker, waited_s=round(waited, 2), provisioned_s=round(time.monotonic() - began, 2)
    )
