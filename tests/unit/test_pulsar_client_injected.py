"""The Pulsar Client runs on the config center and ledger store it is given: no etcd (its
endpoint here answers nothing); pulsar-client connects to the broker only when used."""

from __future__ import annotations

import gc
import socket
import threading

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.failover.switch_events import SwitchEvent, SwitchPhase
from tests.support import wait_for


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_client_uses_the_center_and_ledger_store_passed_in_and_leaves_the_center_open() -> None:
    center = ConfigCenter(MemoryStore())
    center.put_cluster(ClusterSpec(name="pulsar-a", kind="pulsar", url=f"pulsar://127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["pulsar-a"], "pulsar-a")
    store = LedgerStore(center)
    client = Client("r", etcd=f"127.0.0.1:{_closed_port()}", center=center, ledger_store=store)
    try:
        assert client.cluster == "pulsar-a"
        state = client.subscription_state("t", "s")
        try:
            assert state.ledger_store is store
        finally:
            client.release_subscription_state(state)
    finally:
        client.close()
    assert center.route("r").active == "pulsar-a"  # still open: it belongs to the caller


def test_on_switch_is_a_keyword_of_the_client_and_a_rejected_flip_reaches_it() -> None:
    center = ConfigCenter(MemoryStore())
    for name in ("pulsar-a", "pulsar-b"):
        center.put_cluster(ClusterSpec(name=name, kind="pulsar", url=f"pulsar://127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["pulsar-a", "pulsar-b"], "pulsar-a")
    events: list[SwitchEvent] = []
    client = Client("r", etcd=f"127.0.0.1:{_closed_port()}", center=center, on_switch=events.append,
                    options={"hotstandby.clusters.allowed": "pulsar-a"})  # fmt: skip
    try:
        assert client.options.on_switch == events.append
        center.switch("r", "pulsar-b")
        wait_for(lambda: events, 5, "a rejected event")
        [event] = events
        assert (event.phase, event.role, event.to_cluster) == (SwitchPhase.REJECTED, "client", "pulsar-b")
        assert (event.resent, event.filtered) == (0, 0)
    finally:
        client.close()


def test_a_client_dropped_without_close_stops_its_threads() -> None:
    center = ConfigCenter(MemoryStore())
    center.put_cluster(ClusterSpec(name="pulsar-a", kind="pulsar", url=f"pulsar://127.0.0.1:{_closed_port()}"))
    center.create_route("r", ["pulsar-a"], "pulsar-a")
    before = set(threading.enumerate())
    client = Client("r", etcd=f"127.0.0.1:{_closed_port()}", center=center)
    assert set(threading.enumerate()) - before, "the client follows its route on threads of its own"
    del client

    def threads_ended() -> bool:
        gc.collect()  # again each time: see tests/integration/test_pulsar_drop_in.py
        return not set(threading.enumerate()) - before

    wait_for(threads_ended, 10, "the dropped client's threads to end")
