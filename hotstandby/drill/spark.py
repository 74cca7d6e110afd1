"""The Spark drill's workload: the SDK producer of the drill of the route's system — the Kafka
drill's on ``orders`` (the default), the Pulsar drill's on ``payments`` — read by one streaming
query of the ``hotstandby`` Spark source (``hotstandby.drill.spark_job``, run as a process of its
own) whose idempotent sink writes one file per micro-batch; the drill tails those files and
counts every row.

* **What differs by route** is the *feed*, the system drill's workload: how it makes its topic
  (on Pulsar: registered for the reference replicators), produces, and provisions a broker
  restarted after ``--kill-primary``; and the source's options for its topic
  (:func:`source_options`). The rest — the job, the driver kill, the sink — is one code path:
  both kinds have the ``value`` and ``cluster`` columns the sink keeps.
* **One consumer**, whatever ``--consumers`` says: a query is one consumer (it has one
  checkpoint and one ledger), and two would share them.
* **The driver dies.** Before the last flip every process of the job (the Python driver,
  Spark's JVM, its Python workers) is SIGKILLed; after the flip the job starts again on the
  same checkpoint and group, so the query resumes from a checkpoint taken at the older epoch
  and replays the batch it was running. The report's ``phase`` says so, and names the route.
* **The sink** is ``<sink>/batch-<id>.json``; a file seen again with other rows (a replayed
  batch that read differently) counts the rows it gained as received again (duplicates, if
  consumed already) and the rows it lost as no longer consumed.
* The producer starts once the query follows the route (its presence in the config center):
  a Spark session takes 20-60 s to start, and the flips should fall mid-stream. Without a
  ``rate`` it produces for ``PHASE_S`` seconds between flips, in lockstep: it stops at each
  flip's share until the flip is made (a query can take half a minute to follow a flip with
  a killed broker, and a free-running producer had finished by the later flips). From the
  driver's kill until the
  restarted query follows the new epoch it waits again: the rest of the records are then
  produced on the new cluster, so the restarted query reads there (the last flip's latency).
* If the job exits on its own, the drill fails with the end of its log (kept, with the
  checkpoint and the sink, in the temporary directory it names; removed after a clean run).
* ``filtered`` and ``redelivered`` stay 0: the query's executors filter by its ledger, and
  the sink holds each batch once.
* **With a pipeline** (``spark_pipeline``) the query writes to a second topic through the
  ``hotstandby`` sink instead, and the route's system's consumer counts what arrives there
  (:mod:`hotstandby.drill.spark_pipeline`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hotstandby.configcenter import ConfigCenter, polling
from hotstandby.drill.report import DrillReport
from hotstandby.drill.runner import (
    DrillContext,
    DrillFailed,
    DrillOptions,
    DrillProgress,
    Workload,
    new_run_id,
    run_drill,
)
from hotstandby.drill.spark_pipeline import Pipeline
from hotstandby.drill.systems import ROUTES, feed_workload, route_system
from hotstandby.errors import MissingDependencyError
from hotstandby.failover.presence import list_clients
from hotstandby.logs import LEVEL_ENV, get_logger
from hotstandby.logs import ROOT as LOG_ROOT
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.processes import spawn, tail

__all__ = ["DEFAULT_ROUTE", "SparkWorkload", "run", "source_options"]

log = get_logger("hotstandby.drill")

DEFAULT_ROUTE = next(iter(ROUTES["spark"]))
PHASE = "one streaming query, foreachBatch sink"
PIPELINE = "hotstandby source -> transformation -> hotstandby sink -> SDK consumer"
MAX_OFFSETS_PER_TRIGGER = 2000  # Kafka routes: records per micro-batch
# Seconds of producing between flips (without --rate): a micro-batch takes 1-2 s here, the first
# on a new cluster up to 10 s; in 6 s phases (the other drills') the flips bunch up at the end.
PHASE_S = 10.0
_START_TIMEOUT_S = 240.0  # a Spark session on a busy 2-core machine: 20-60 s
_STOP_TIMEOUT_S = 30.0  # SIGTERM -> the query and the session stopped; then SIGKILL
_KILL_TIMEOUT_S = 10.0
_SCAN_S = 0.2


def _session_members(sid: int) -> list[int]:
    """The live processes of session ``sid``: the job, Spark's JVM, its Python daemons and workers."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # state, ppid, pgrp, session, ...
        if len(fields) > 3 and fields[0] not in ("Z", "X") and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


class _Job:
    """One run of the streaming job, in a session of its own (Spark's daemons make process
    groups of their own, the session holds them all)."""

    def __init__(self, argv: list[str], log_path: Path, cwd: Path) -> None:
        self.log_path = log_path
        env = dict(os.environ)
        if logging.getLogger(LOG_ROOT).isEnabledFor(logging.INFO):  # the drill logs its events: so does the job
            env[LEVEL_ENV] = "info"
        self.proc = spawn(argv, log_path=log_path, cwd=cwd, env=env)
        log.info("drill.spark_job_started", pid=self.proc.pid, log=str(log_path))

    def exit_status(self) -> int | None:
        return self.proc.poll()

    def _gone(self) -> bool:
        self.proc.poll()  # reaps the job once it exited
        return not _session_members(self.proc.pid)

    def kill(self) -> None:
        """SIGKILL every process of the job's session until none is left: a driver crash."""

        def killed() -> bool:
            for pid in _session_members(self.proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return self._gone()

        if not polling.wait_until(killed, _KILL_TIMEOUT_S, first=0.05, most=0.2):
            raise DrillFailed(f"the Spark job's processes {_session_members(self.proc.pid)} outlived SIGKILL")

    def stop(self) -> None:
        """SIGTERM (the job stops its query and session, the JVM and Spark's daemons follow),
        then SIGKILL after a timeout."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        if not polling.wait_until(self._gone, _STOP_TIMEOUT_S, first=0.05, most=0.5):
            log.warning("drill.spark_job_killed", pid=self.proc.pid, after_s=_STOP_TIMEOUT_S)
            self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(_KILL_TIMEOUT_S)


def source_options(system: str, topic: str) -> dict[str, str]:
    """The Spark source's options that read ``topic`` on a route of ``system`` (besides the
    route, the group and ``startingOffsets``; docs/spark.md)."""
    if system == "pulsar":  # by its full name; Pulsar counts no offsets: no maxOffsetsPerTrigger
        return {"topic": topic}
    return {"subscribe": topic, "maxOffsetsPerTrigger": str(MAX_OFFSETS_PER_TRIGGER)}


class SparkWorkload:
    system = "spark"

    def __init__(self, run: str, route: str = DEFAULT_ROUTE, master: str | None = None, pipeline: bool = False) -> None:
        self.run = run
        self.master = master
        self.feed_system = route_system(self.system, route)
        self.feed: Workload = feed_workload(self.feed_system, run)  # its producer feeds the query
        if self.feed.route != route:
            raise DrillFailed(f"the {self.feed_system} drill produces on route {self.feed.route!r}, not {route!r}")
        self.route = route
        self.topic = self.feed.topic
        self.pipeline = Pipeline(self.feed_system, run) if pipeline else None
        self._phase = f"route {route} ({self.feed_system}), {PIPELINE if pipeline else PHASE}"
        self.phase = self._phase
        self.group = f"drill-{run}"
        self._dir: Path | None = None
        self._lock = threading.Lock()
        self._job: _Job | None = None
        self._closed = False
        self._killed_at: int | None = None
        self._resume_at: int | None = None  # the route's epoch the restarted query must reach
        self._stamps: dict[str, tuple[int, int, int]] = {}  # file -> (inode, mtime, size) last read
        self._files: dict[str, Counter[tuple[int, str]]] = {}  # file -> its rows (seq, cluster)
        self._present: Counter[int] = Counter()  # seq -> rows holding it across the sink's files
        self.rewritten = 0  # batch files written again (Spark replayed the batch)
        self.changed_rows = 0  # rows a rewrite added or removed

    @property
    def _work(self) -> Path:
        if self._dir is None:
            raise DrillFailed("the Spark workload was not prepared")
        return self._dir

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        self.feed.prepare(rc, ctx)
        if self.pipeline is not None:
            self.pipeline.prepare(rc, ctx)
        self._dir = Path(tempfile.mkdtemp(prefix=f"hotstandby-drill-spark-{self.run}-"))
        (self._dir / "sink").mkdir()

    def restarted(self, rc: RefCluster, broker: str) -> None:
        self.feed.restarted(rc, broker)
        if self.pipeline is not None:
            self.pipeline.restarted(rc, broker)

    # -- the job --------------------------------------------------------------------------

    def _start(self, ctx: DrillContext) -> _Job:
        work = self._work
        argv = [sys.executable, "-m", "hotstandby.drill.spark_job", "--etcd", ctx.etcd, "--namespace", ctx.namespace,
                "--route", self.route, "--group", self.group,
                "--checkpoint", str(work / "checkpoint"), "--sink", str(work / "sink")]  # fmt: skip
        if self.master:
            argv += ["--master", self.master]
        if self.pipeline is not None:
            argv += self.pipeline.job_args()
        security = {k: v for k, v in ctx.etcd_config.items() if k != "hotstandby.etcd"}  # CA, user, password file
        for key, value in {**source_options(self.feed_system, self.topic), **security}.items():
            argv += ["--option", f"{key}={value}"]
        return _Job(argv, work / "job.log", work)

    @property
    def job_pid(self) -> int | None:
        """The running job's PID (its processes are in the session it leads), or None."""
        job = self._job
        return None if job is None else job.proc.pid

    def _check_job(self) -> None:
        with self._lock:  # before_flip takes the job out under the lock before killing it
            job = self._job
            status = None if job is None else job.exit_status()
        if job is not None and status is not None:
            raise DrillFailed(f"the Spark job exited with status {status}; {job.log_path} ends:\n"
                              f"{tail(job.log_path, 30)}")  # fmt: skip

    def before_flip(self, k: int, ctx: DrillContext) -> None:
        """Before the last flip: SIGKILL the job (every process of it)."""
        if k != ctx.options.switches - 1:
            return
        with self._lock:
            job, self._job = self._job, None
        if job is None:
            return
        ctx.producing.clear()  # until the restarted query follows the new epoch (after_flip)
        job.kill()
        ctx.tally.event("kill", "Spark driver")
        self._killed_at = k
        log.info("drill.driver_killed", switch=k + 1, pid=job.proc.pid)

    def after_flip(self, k: int, ctx: DrillContext) -> None:
        """After the last flip: the job again, on its checkpoint (taken at the older epoch). The
        producer, held since the kill, waits until the query follows the route's new epoch, so
        the restarted query has records to read on the new cluster (not only a backlog it
        drains on the old one)."""
        if self._killed_at != k:
            return
        with ConfigCenter.open(ctx.settings()) as center:
            self._resume_at = center.route(self.route).epoch  # the flip is made: its epoch
        with self._lock:
            if self._closed:
                return
            self._job = self._start(ctx)
        ctx.tally.event("restart", "Spark driver")
        self.phase = f"{self._phase}; driver SIGKILLed before switch {k + 1} and restarted from its checkpoint after it"

    # -- producing and consuming ----------------------------------------------------------

    def produce(self, ctx: DrillContext) -> None:
        """The feed's producer, once the query follows the route."""
        self._wait_for_query(ctx)
        if not ctx.stop.is_set():
            self.feed.produce(ctx)

    def _following(self, center: ConfigCenter, epoch: int | None = None) -> bool:
        """Whether the query follows the route (at ``epoch``): its planner's presence."""
        client = f"spark-{self.group}"
        return any(d.get("client") == client and d.get("state") == "active" and epoch in (None, d.get("epoch"))
                   for d in list_clients(center, self.route))  # fmt: skip

    def _wait_for_query(self, ctx: DrillContext) -> None:
        limit = max(min(_START_TIMEOUT_S, ctx.deadline - time.monotonic()), 1.0)
        with ConfigCenter.open(ctx.settings()) as center:
            if not polling.wait_until(lambda: ctx.stop.is_set() or self._following(center), limit, first=0.2, most=0.5):
                log_path = self._work / "job.log"
                raise DrillFailed(f"the Spark query did not start within {limit:.0f} s; {log_path} ends:\n"
                                  f"{tail(log_path, 30)}")  # fmt: skip

    def consume(self, ctx: DrillContext, index: int) -> None:
        """The job (index 0 only: one query), and the sink's files as they come."""
        if index > 0:
            return
        failed = True
        try:
            with self._lock:
                self._job = self._start(ctx)
            if self.pipeline is not None:
                self.pipeline.start_consumer(ctx)
            with ConfigCenter.open(ctx.settings()) as center:
                while not ctx.stop.is_set():
                    self._scan(ctx)
                    self._check_job()
                    if self.pipeline is not None:
                        self.pipeline.check()
                    resume_at = self._resume_at
                    if not ctx.producing.is_set() and resume_at is not None and self._following(center, resume_at):
                        log.info("drill.query_resumed", epoch=self._resume_at)
                        ctx.producing.set()
                    ctx.stop.wait(_SCAN_S)
            failed = False
        finally:
            with self._lock:
                job, self._job, self._closed = self._job, None, True
            if job is not None:
                job.stop()
            if self.pipeline is not None:
                self.pipeline.stop()
            self._scan(ctx)
            log.info(
                "drill.spark_sink", files=len(self._files), rewritten=self.rewritten, changed_rows=self.changed_rows
            )
            if failed or ctx.tally.lost():  # the job log says where a stalled query was
                log.warning("drill.spark_kept", dir=str(self._work))
            else:
                shutil.rmtree(self._work, ignore_errors=True)

    def _scan(self, ctx: DrillContext) -> None:
        files = sorted(self._work.joinpath("sink").glob("batch-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        for path in files:
            try:
                st = path.stat()
                text = path.read_text()
            except FileNotFoundError:
                continue
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self._stamps.get(path.name) == stamp:
                continue
            self._stamps[path.name] = stamp  # read after stat: a newer write is read again next time
            rows = Counter((int(value), str(cluster)) for value, cluster in json.loads(text)["rows"])
            self._report(ctx, path.name, rows)

    def _report(self, ctx: DrillContext, name: str, rows: Counter[tuple[int, str]]) -> None:
        before = self._files.get(name)
        self._files[name] = rows
        added, removed = (rows, Counter[tuple[int, str]]()) if before is None else (rows - before, before - rows)
        if before is not None:
            self.rewritten += 1
            changed = sum(added.values()) + sum(removed.values())
            self.changed_rows += changed
            if changed:
                log.warning("drill.batch_changed", file=name, added=sum(added.values()), removed=sum(removed.values()))
        for (seq, cluster), n in sorted(added.items()):
            for _ in range(n):
                ctx.tally.received(seq, cluster)
                ctx.tally.acknowledged([seq])
                self._present[seq] += 1
        gone = []
        for (seq, _), n in removed.items():
            self._present[seq] -= n
            if self._present[seq] <= 0:
                gone.append(seq)
        if gone:
            ctx.tally.withdrawn(gone)


def run(rc: RefCluster, options: DrillOptions, progress: Callable[[DrillProgress], None] | None = None) -> DrillReport:
    """The Spark drill on the (running) reference cluster ``rc``, on ``options.route`` (default
    ``orders``): one query, whatever ``options.consumers`` says, on ``options.spark_master``
    (default ``local[2]``)."""
    if importlib.util.find_spec("pyspark") is None:  # the job needs it; this process does not
        raise MissingDependencyError("the Spark drill needs pyspark (Python >= 3.11): pip install 'hotstandby[spark]'")
    workload = SparkWorkload(new_run_id(), options.route or DEFAULT_ROUTE, options.spark_master, options.spark_pipeline)
    options = replace(options, consumers=1, phase_s=max(options.phase_s, PHASE_S), lockstep=True)
    return run_drill(rc, options, workload, progress)
