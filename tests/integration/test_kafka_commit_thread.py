"""Asynchronous commits leave the etcd round trip to the consumer's commit thread: the call
returns while the ledger store is still under way, the broker's offsets follow the ledgers,
never precede them (adapters/kafka/consumer/background_commit.py)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import TopicPartition

from hotstandby.adapters.kafka import Consumer
from hotstandby.configcenter import ConfigCenter
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.refcluster import RefCluster
from tests.integration.kafka_helpers import create_topic, produce_values, route_config
from tests.integration.kafka_reading import hold
from tests.support import wait_for

_HELD_S = 10.0  # how long a store waits for the gate at most (an inline store would wait as long)


class GatedLedgers(LedgerStore):
    """Ledger saves wait while the gate is closed."""

    def __init__(self, center: ConfigCenter) -> None:
        super().__init__(center)
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def save_all(self, group: str, ledgers: Mapping[tuple[str, int], tuple[PartitionLedger, int]],
                 **kw: Any) -> dict[tuple[str, int], int]:  # fmt: skip
        if not self.gate.is_set():
            self.waiting.set()
            self.gate.wait(_HELD_S)
        return super().save_all(group, ledgers, **kw)


def test_an_asynchronous_commit_returns_before_its_ledger_store_and_the_broker_offsets_follow_it(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    topic, group = f"ct-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(refcluster.cluster_spec("kafka-a"), topic, 1)
    produce_values(refcluster, namespace, topic, [f"v{i}" for i in range(5)])
    ledgers = GatedLedgers(center)
    consumer = Consumer(route_config(refcluster, namespace, **{"group.id": group, "enable.auto.commit": False}),
                        ledger_store=ledgers)  # fmt: skip
    try:
        consumer.subscribe([topic])
        held = hold(consumer, 5)
        ledgers.gate.clear()
        started = time.monotonic()
        assert consumer.commit(message=held[-1], asynchronous=True) is None
        returned_s = time.monotonic() - started
        assert returned_s < 1.0, f"the commit waited {returned_s:.1f} s for the ledger store"
        assert ledgers.waiting.wait(10), "the commit thread stores the ledger"
        # Ledger first: the broker has no offset while the store waits.
        assert consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset < 0
        assert consumer.poll(0.2) is None, "polling goes on meanwhile"
        ledgers.gate.set()

        def stored_and_committed() -> bool:
            ledger = LedgerStore(center).load(group, topic, 0).ledger
            committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
            return len(ledger) == 5 and committed == 5

        wait_for(stored_and_committed, 30, "the ledger stored, then the offset committed on the broker")
    finally:
        ledgers.gate.set()
        consumer.close()
