"""``hotstandby.adapters.memory.Producer``: a Kafka-like producer on in-memory clusters that
follows a route through the failover core.

As the Kafka facade: every record gets an ``hs-id`` header and an SDK-chosen partition;
:meth:`produce` queues it (*pending*); :meth:`poll` / :meth:`flush` send the queue to the
cluster and serve delivery callbacks (once per record). An acknowledged record moves to the
replay window (:class:`~hotstandby.adapters.memory.sending.Sending`). A switch is
:class:`~hotstandby.adapters.memory.producer_switch.ProducerSwitch`.
"""

from __future__ import annotations

import time
from typing import Any

from hotstandby.adapters.memory.client import Clock, MemoryClient
from hotstandby.adapters.memory.producer_switch import ProducerSwitch
from hotstandby.adapters.memory.sending import DeliveryCallback, Record, Sending
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.client_options import ClientOptions
from hotstandby.failover.follower import wait_slices
from hotstandby.failover.identity import HEADER, RecordId, new_session
from hotstandby.failover.outbox import Outbox
from hotstandby.failover.partitioner import Partitioner
from hotstandby.failover.switch_events import ClientCounts

__all__ = ["Producer"]


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"expected bytes or str, got {type(value).__name__}")


# mypy sees adapter modules as Any until the package mapping is typed.
class Producer(MemoryClient):  # type: ignore[misc,unused-ignore]
    """Kafka-like producer (``produce``/``poll``/``flush``) on in-memory clusters."""

    def __init__(
        self, config: dict[str, Any], *, center: ConfigCenter | None = None, clock: Clock = time.monotonic
    ) -> None:
        self.options, raw = ClientOptions.split(config, role="producer")
        self._on_delivery: DeliveryCallback | None = raw.get("on_delivery")
        self._clock = clock
        spec, cluster = self._setup(self.options, "producer", center)
        outbox: Outbox[tuple[str, int, int], Record] = Outbox(
            self.options.replay_window_ms, self.options.replay_window_bytes, clock=clock
        )
        self._sending = Sending(self._lock, cluster, spec, outbox, clock)
        self._session = new_session()
        self._sequences: dict[tuple[str, int], int] = {}
        self._partitioner = Partitioner(self.options.partitioner or "murmur2")
        self._partition_counts: dict[str, int] = {}
        self._switch = ProducerSwitch(self._sending, self.options)
        self._follow_route(self._switch, lambda: self._sending.spec, lambda: ClientCounts(resent=self.resent))

    @property
    def resent(self) -> int:
        """Records sent again at switches."""
        return self._switch.resent

    @property
    def trimmed(self) -> int:
        """Window records not sent again at switches: replication had copied them."""
        return self._switch.trimmed

    # -- producing ------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        """Queue one record (as confluent_kafka's ``produce``); waits while a switch runs."""
        key_b, value_b = _as_bytes(key), _as_bytes(value)
        extra = tuple((str(k), _as_bytes(v) or b"") for k, v in (headers or []))
        if any(k == HEADER for k, _ in extra):
            raise ValueError(f"the {HEADER!r} header is set by hotstandby; do not set it yourself")
        with self._lock:
            self._await_gate(None)
            if partition < 0:
                count = self._partition_counts.get(topic)
                if count is None:
                    count = self._partition_counts[topic] = self._sending.cluster.partitions(topic)
                partition = self._partitioner.partition(topic, key_b, count)
            seq = self._sequences.get((topic, partition), 0)
            self._sequences[(topic, partition)] = seq + 1
            rid = RecordId(self._session, partition, seq)
            record = Record(
                topic, partition, key_b, value_b, (*extra, (HEADER, rid.encode())),
                timestamp or int(self._clock() * 1000), rid, on_delivery or self._on_delivery,
                len(key_b or b"") + len(value_b or b""),
            )  # fmt: skip
            self._sending.outbox.add(record.slot, record)
            self._sending.queue.append(record)

    def poll(self, timeout: float | None = 0) -> int:
        """Send what is queued and serve delivery callbacks; how many were served."""
        with self._lock:
            if not self._await_gate(timeout if timeout is not None and timeout >= 0 else None):
                return 0
            reports = self._sending.send_queue()
        self._sending.serve(reports)
        return len(reports)

    def flush(self, timeout: float | None = -1) -> int:
        """Send everything, across switches (up to ``timeout`` s); how many records are left."""
        for wait in wait_slices(timeout):
            self.poll(0)
            with self._lock:
                if not self._sending.outbox.pending:
                    return 0
            time.sleep(min(wait, 0.01))
        return len(self)

    def __len__(self) -> int:
        with self._lock:
            return self._sending.outbox.pending

    def close(self, timeout: float = 10.0) -> int:
        """Flush, stop following the route; returns records still unacknowledged."""
        left = self.flush(timeout)
        self._follower.close()
        return left
