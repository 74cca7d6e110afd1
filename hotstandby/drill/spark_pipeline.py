"""The Spark drill's pipeline part (``hotstandby drill --system spark --pipeline``): the query
reads the feed's topic through the ``hotstandby`` source, transforms it, and writes it to a
second topic of the same route through the ``hotstandby`` sink; an SDK consumer of that route's
system (the Kafka or Pulsar drill's, on the second topic) counts what arrives there.

So the drill counts end to end — source, transformation, sink, replication, consumer — what was
lost and what was duplicated across the flips, the killed primary and the killed driver (whose
restarted query writes its last micro-batch again: the same identities, dropped by the
consumer).
"""

from __future__ import annotations

import threading

from hotstandby.drill.runner import DrillContext, DrillFailed, Workload
from hotstandby.drill.systems import feed_workload
from hotstandby.logs import get_logger
from hotstandby.refcluster import RefCluster

__all__ = ["Pipeline"]

log = get_logger("hotstandby.drill")

_JOIN_S = 30.0  # the consumer's thread after the drill stops: how long to wait for it


class Pipeline:
    """The written topic and its consumer (the ``system`` drill's workload, run ``<run>-out``)."""

    def __init__(self, system: str, run: str) -> None:
        self.out: Workload = feed_workload(system, f"{run}-out")
        self.topic: str = self.out.topic
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def prepare(self, rc: RefCluster, ctx: DrillContext) -> None:
        self.out.prepare(rc, ctx)

    def restarted(self, rc: RefCluster, broker: str) -> None:
        self.out.restarted(rc, broker)

    def job_args(self) -> list[str]:
        return ["--write-topic", self.topic]

    def start_consumer(self, ctx: DrillContext) -> None:
        """The written topic's consumer, on a thread, until the drill stops."""

        def consume() -> None:
            try:
                self.out.consume(ctx, 0)
            except BaseException as exc:  # reported by check(), on the drill's thread
                self._failure = exc
                log.warning("drill.pipeline_consumer_failed", error=repr(exc))

        self._thread = threading.Thread(target=consume, daemon=True, name="hotstandby-drill-pipeline")
        self._thread.start()

    def check(self) -> None:
        if self._failure is not None:
            raise DrillFailed(f"the pipeline's consumer failed: {self._failure!r}") from self._failure

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.join(_JOIN_S)
            if self._thread.is_alive():
                log.warning("drill.pipeline_consumer_running", after_s=_JOIN_S)
