"""Behaviour every messaging-system adapter must have, written once.

A runner subclasses :class:`AdapterContract`, sets ``kind`` and provides the fixtures
``live_broker`` / ``dead_broker`` (``(host, port)`` of a broker that answers and of one that
does not) and ``kit`` (a :class:`Kit`: the system's drop-in clients on one route, one topic and
one consumer group, and a way to flip the route). Runners on the reference cluster add
:class:`DrillContract`. Runners: ``tests/unit/test_adapter_memory.py`` (in memory),
``tests/integration/test_adapter_kafka.py`` and ``test_adapter_pulsar.py``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotstandby.adapter import Adapter, load_adapter
from hotstandby.drill import DrillOptions
from hotstandby.drill.systems import drill_system
from hotstandby.errors import FormatError
from hotstandby.failover.identity import RecordId
from hotstandby.failover.partitioner import KEYED
from hotstandby.failover.probe import ProtocolError
from hotstandby.refcluster import RefCluster


class Received(NamedTuple):
    value: str
    rid: RecordId | None  # the identity the record carried
    handle: Any  # what the system acknowledges (a Kafka or Pulsar message)


class ProducerDriver(Protocol):
    def send(self, values: Sequence[str]) -> None:
        """Produce ``values`` and wait until the cluster acknowledged every one."""

    def close(self) -> None: ...


class ConsumerDriver(Protocol):
    def take(self, count: int, timeout: float) -> list[Received]:
        """The next ``count`` records handed out (fails after ``timeout`` s)."""

    def ack(self, received: Received) -> None:
        """Acknowledge one record as the application would (Kafka: a synchronous commit of it)."""

    def quiet(self) -> list[str]:
        """Values still handed out within a short bounded wait (expected: none)."""

    def close(self) -> None: ...


class Kit(Protocol):
    def producer(self) -> ProducerDriver: ...

    def consumer(self) -> ConsumerDriver:
        """A new consumer of the test's group, reading the test's topic."""

    def flip(self) -> None:
        """An SRE flips the route to its other cluster."""


def take_and_ack(consumer: ConsumerDriver, count: int, timeout: float = 60.0) -> list[Received]:
    got = consumer.take(count, timeout)
    for received in got:
        consumer.ack(received)
    return got


class AdapterContract:
    kind: str

    @pytest.fixture
    def adapter(self) -> Adapter:
        return load_adapter(self.kind)

    def test_is_an_adapter_of_its_kind(self, adapter: Adapter) -> None:
        assert isinstance(adapter, Adapter)
        assert adapter.kind == self.kind
        assert adapter.identity_key == "hs-id"

    def test_identity_survives_the_systems_encoding(self, adapter: Adapter) -> None:
        # The property is built per call: one hypothesis test per adapter, not one method shared
        # by the subclasses (hypothesis refuses a test run from several classes).
        @given(st.binary(min_size=16, max_size=16), st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1))
        def round_trip(session: bytes, partition: int, sequence: int) -> None:
            rid = RecordId(session, partition, sequence)
            assert adapter.decode_identity(adapter.encode_identity(rid)) == rid

        round_trip()

    def test_a_malformed_identity_is_refused_not_guessed(self, adapter: Adapter) -> None:
        good = adapter.encode_identity(RecordId(bytes(16), 1, 2))
        for bad in (good[:-1], good[:5], b"\x09" + bytes(18), "zz"):
            with pytest.raises(FormatError):
                adapter.decode_identity(bad)

    @pytest.fixture
    def dead_broker(self) -> tuple[str, int]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return "127.0.0.1", s.getsockname()[1]  # bound, not listening: refused

    def test_probe_answers_for_a_live_broker_and_raises_for_one_that_does_not(
        self, adapter: Adapter, live_broker: tuple[str, int], dead_broker: tuple[str, int]
    ) -> None:
        assert adapter.probe(*live_broker, 2.0)
        with pytest.raises((OSError, ProtocolError)):
            adapter.probe(*dead_broker, 1.0)

    def test_drop_in_clients_are_offered(self, adapter: Adapter) -> None:
        clients = adapter.clients()
        assert clients and all(isinstance(c, type) for c in clients.values())

    # -- produce, consume, acknowledge, switch --------------------------------------------

    def test_records_produced_are_handed_out_once_each_with_their_identity(self, kit: Kit) -> None:
        values = [f"r{i}" for i in range(20)]
        producer, consumer = kit.producer(), kit.consumer()
        try:
            producer.send(values)
            got = take_and_ack(consumer, len(values))
            assert sorted(r.value for r in got) == sorted(values)
            assert None not in {r.rid for r in got} and len({r.rid for r in got}) == len(values)
            assert consumer.quiet() == []
        finally:
            consumer.close()
            producer.close()

    def test_what_the_group_acknowledged_is_not_handed_out_to_its_next_consumer(self, kit: Kit) -> None:
        producer, first = kit.producer(), kit.consumer()
        try:
            producer.send([f"a{i}" for i in range(10)])
            take_and_ack(first, 10)
        finally:
            first.close()
        second = kit.consumer()
        try:
            producer.send([f"b{i}" for i in range(5)])
            got = take_and_ack(second, 5)
            assert sorted(r.value for r in got) == [f"b{i}" for i in range(5)]
            assert second.quiet() == []
        finally:
            second.close()
            producer.close()

    def test_a_flip_mid_stream_loses_and_duplicates_nothing(self, kit: Kit) -> None:
        producer, consumer = kit.producer(), kit.consumer()
        try:
            producer.send([f"a{i}" for i in range(10)])
            before = take_and_ack(consumer, 10)
            kit.flip()
            producer.send([f"b{i}" for i in range(10)])
            after = take_and_ack(consumer, 10, timeout=120)
            assert sorted(r.value for r in before) == sorted(f"a{i}" for i in range(10))
            assert sorted(r.value for r in after) == sorted(f"b{i}" for i in range(10)), "lost or duplicated"
            assert consumer.quiet() == []
        finally:
            consumer.close()
            producer.close()


class DrillContract:
    """Addressing and the system's drill on the reference cluster (fixture ``refcluster``), next to
    :class:`AdapterContract` (its ``adapter`` fixture)."""

    cluster: str  # a cluster of the system on the reference cluster

    def test_addresses_its_clusters_as_the_config_center_stores_them(
        self, adapter: Adapter, refcluster: RefCluster
    ) -> None:
        spec = refcluster.cluster_spec(self.cluster)
        assert json.loads(spec.to_json())[adapter.url_field] == spec.url
        assert adapter.endpoints(spec.url) == [("127.0.0.1", refcluster.ports.of(self.cluster))]
        with pytest.raises(ValueError):
            adapter.endpoints("no-port-here")
        assert not adapter.uses_tls(spec.url, spec.client_config())
        assert adapter.cluster_keys and all(key not in spec.client_config() for key in adapter.cluster_keys)
        assert adapter.default_partitioner in KEYED

    def test_a_short_drill_there_and_back_loses_and_duplicates_nothing(
        self, adapter: Adapter, refcluster: RefCluster
    ) -> None:
        report = drill_system(
            adapter.kind, refcluster, DrillOptions(messages=600, switches=2, consumers=2, rate=300, timeout_s=120)
        )
        assert (report.lost, report.duplicated) == (0, 0), report.human()
        for part in report.phases or [report]:  # a drill in parts runs each with the same options
            assert part.produced == 600
            assert len(part.switches) == 2
            assert part.switches[1].to == part.switches[0].source, "the second flip goes back (failback)"
