"""A committing Kafka consumer process SIGKILLed and restarted while records arrive: a record
covered by a commit that returned is never handed out again (confluent_kafka's commit of a
message covers it and the earlier records of its partition).

The application (committing_consumer.py) commits from a worker thread while it keeps polling,
so a rebalance — the restarted member joining, the killed one expiring — falls between handing
records out and committing them. A commit of a record handed out before the rebalance used to
be taken for one from a cluster the consumer had left: only that record was acknowledged, the
earlier ones it covers were handed out again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from hotstandby.adapters.kafka import Producer
from hotstandby.configcenter import ConfigCenter
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, route_config
from tests.support import wait_for

CHILD = Path(__file__).with_name("committing_consumer.py")
PARTITIONS = 2
RATE = 100  # records per second
PRODUCE_S = 24.0
# Seconds into production: the reference broker's session timeout is 6 s, so every restarted
# member joins a group in which the killed one still counts, and the group rebalances again
# when the dead member expires — while the new one is committing and records still arrive.
KILLS = (4.0, 10.0)


@dataclass
class Tally:
    """What the consumer processes reported, in order (one process at a time)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    handed: list[tuple[int, int, str]] = field(default_factory=list)  # (partition, offset, value)
    violations: list[str] = field(default_factory=list)
    covered: dict[int, int] = field(default_factory=dict)  # partition -> offset after the last commit returned
    events: list[str] = field(default_factory=list)

    def line(self, child: int, text: str) -> None:
        kind, *rest = text.split()
        with self.lock:
            self.events.append(f"{time.monotonic():.3f} {child} {text.strip()}")
            if kind == "H":
                partition, offset, value = int(rest[0]), int(rest[1]), rest[2]
                if offset < self.covered.get(partition, 0):
                    self.violations.append(f"process {child}: {value} ({partition}@{offset}) handed out again, "
                                           f"covered by a commit through {self.covered[partition] - 1}")  # fmt: skip
                self.handed.append((partition, offset, value))
            elif kind == "C":
                partition, offset = int(rest[0]), int(rest[1])
                self.covered[partition] = max(self.covered.get(partition, 0), offset + 1)

    def values(self) -> set[str]:
        with self.lock:
            return {v for _, _, v in self.handed}


class Child:
    """One consumer process; its report lines reach ``tally`` through a reader thread."""

    def __init__(self, index: int, config: dict[str, object], topic: str, tally: Tally, log: IO[bytes]) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, str(CHILD), json.dumps(config), topic, str(write_fd)],
                stdin=subprocess.PIPE, stdout=log, stderr=log, pass_fds=(write_fd,),
            )  # fmt: skip
        finally:
            os.close(write_fd)
        self.closed = False
        self._reader = threading.Thread(target=self._read, args=(index, read_fd, tally), daemon=True)
        self._reader.start()

    def _read(self, index: int, fd: int, tally: Tally) -> None:
        with os.fdopen(fd) as lines:
            for text in lines:
                if text.strip() == "closed":
                    self.closed = True
                elif text.strip():
                    tally.line(index, text)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)

    def stop(self, timeout: float = 60.0) -> None:
        """Close stdin (the child closes its consumer and exits) and wait for it."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout)
        self._reader.join(10)

    def reap(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def produce_paced(producer: Producer, topic: str, count: int, started: float) -> None:
    for i in range(count):
        pause = started + i / RATE - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # pacing the production rate, not waiting for a condition
        producer.produce(topic, key=f"k{i}", value=f"r{i}")
        producer.poll(0)
    assert producer.flush(60) == 0


def test_records_covered_by_a_returned_commit_are_not_handed_out_again_after_crashes(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, tmp_path: Path
) -> None:
    topic = f"k-{uuid.uuid4().hex[:8]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, PARTITIONS)
    config = route_config(refcluster, namespace, **{"group.id": f"g-{uuid.uuid4().hex[:6]}",
                                                    "enable.auto.commit": False})  # fmt: skip
    count = int(PRODUCE_S * RATE)
    tally = Tally()
    children: list[Child] = []
    with open(tmp_path / "consumers.log", "wb") as log:
        try:
            children.append(Child(0, config, topic, tally, log))
            producer = Producer(route_config(refcluster, namespace))
            started = time.monotonic()
            production = threading.Thread(target=produce_paced, args=(producer, topic, count, started))
            production.start()
            try:
                for at in KILLS:
                    time.sleep(max(started + at - time.monotonic(), 0.0))  # the schedule
                    children[-1].kill()
                    children.append(Child(len(children), config, topic, tally, log))
            finally:
                production.join(PRODUCE_S + 60)
                producer.close()
            wanted = {f"r{i}" for i in range(count)}
            wait_for(lambda: wanted <= tally.values(), 90, "every record to be handed out")
            children[-1].stop()
            assert children[-1].closed, "the last consumer closed cleanly"
        finally:
            for child in children:
                child.reap()
    (tmp_path / "events.txt").write_text("\n".join(tally.events))  # with consumers.log, for a failure
    assert not tally.violations, "\n".join(tally.violations[:20]) + f"\n({len(tally.violations)} in all)"
