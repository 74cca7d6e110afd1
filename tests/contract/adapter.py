"""Behaviour every messaging-system adapter must have, written once.

A subclass sets ``kind`` and runs on the reference cluster (fixture ``refcluster``);
``tests/integration/test_adapter_kafka.py`` runs it for Kafka.
"""

from __future__ import annotations

import json
import socket

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


class AdapterContract:
    kind: str
    cluster: str  # a cluster of this kind on the reference cluster

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

    def test_probe_answers_for_a_live_broker_and_raises_for_a_closed_port(
        self, adapter: Adapter, refcluster: RefCluster
    ) -> None:
        host, port = refcluster.cluster_spec(self.cluster).endpoints()[0]
        assert adapter.probe(host, port, 2.0)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]  # bound, not listening: refused
            with pytest.raises((OSError, ProtocolError)):
                adapter.probe("127.0.0.1", closed, 1.0)

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

    def test_drop_in_clients_are_offered(self, adapter: Adapter) -> None:
        clients = adapter.clients()
        assert clients and all(isinstance(c, type) for c in clients.values())

    def test_a_short_drill_there_and_back_loses_and_duplicates_nothing(self, refcluster: RefCluster) -> None:
        report = drill_system(
            self.kind, refcluster, DrillOptions(messages=1000, switches=2, consumers=2, timeout_s=120)
        )
        assert (report.lost, report.duplicated) == (0, 0), report.human()
        for part in report.phases or [report]:  # a drill in parts runs each with the same options
            assert part.produced == 1000
            assert len(part.switches) == 2
            assert part.switches[1].to == part.switches[0].source, "the second flip goes back (failback)"
