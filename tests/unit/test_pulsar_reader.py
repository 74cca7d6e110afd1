"""The Pulsar Reader across a switch, on its client's switch gate (no broker: stand-ins with
pulsar.Reader's and pulsar.Message's accessors)."""

from __future__ import annotations

import threading
from typing import Any, cast

import pulsar
import pytest

from hotstandby.adapters.pulsar.reader.reader import Reader
from hotstandby.adapters.pulsar.reader.stall_watch import StallWatch
from hotstandby.configcenter.documents import ClusterSpec
from hotstandby.failover.identity import RecordId
from hotstandby.failover.switch_gate import SwitchGate
from tests.unit.test_pulsar_accept import _Message

TOPIC = "persistent://public/default/t"


class _Inner:
    """Stands in for pulsar.Reader: hands out its messages in order."""

    def __init__(self, *messages: _Message) -> None:
        self.messages = list(messages)
        self.reads = 0

    def read_next(self, timeout_millis: int) -> _Message:
        self.reads += 1
        if not self.messages:
            raise pulsar.Timeout("none")
        return self.messages.pop(0)


class _Client:
    """Stands in for the SDK Client (its gate) and for the new cluster's pulsar.Client."""

    def __init__(self, new: _Inner) -> None:
        self.gate = SwitchGate(threading.RLock())
        self._new = new

    def create_reader(self, topic: str, start: Any, **kwargs: Any) -> _Inner:
        assert start == pulsar.MessageId.earliest, "the new cluster is read from the earliest message"
        return self._new


def _reader(client: _Client, inner: _Inner) -> Reader:
    made = Reader.__new__(Reader)  # the reading logic alone, without a broker
    made._client, made._topic, made._kwargs = cast(Any, client), TOPIC, {}
    made._lock, made._gate, made._returned = threading.RLock(), client.gate, {}
    made._closed, made.skipped, made._inner, made._listener = False, 0, inner, None
    made._start, made._watch = pulsar.MessageId.earliest, StallWatch(TOPIC, made._replace_stalled)
    return made


def test_reads_wait_while_the_clients_gate_is_closed_and_skip_what_was_returned_after_the_switch() -> None:
    first = _Message(RecordId(bytes(16), 0, 0), 1, 0)
    old = _Inner(first)
    new = _Inner(_Message(RecordId(bytes(16), 0, 0), 7, 0), _Message(RecordId(bytes(16), 0, 1), 7, 1))
    client = _Client(new)
    reader = _reader(client, old)
    client.gate.close()  # a switch of the client runs
    with pytest.raises(pulsar.Timeout):
        reader.read_next(50)
    assert old.reads == 0, "read while the client's gate was closed"
    client.gate.open()  # that switch failed: the old cluster goes on
    assert reader.read_next(50) is first
    with client.gate.held():  # the next one succeeds
        commit = reader.prepare(
            cast(Any, client), ClusterSpec(name="b", kind="pulsar", url="pulsar://127.0.0.1:1"), "a"
        )
        commit()
    got = reader.read_next(50)
    assert got.message_id().entry_id() == 1 and got.message_id().ledger_id() == 7, "not the next message"
    assert reader.skipped == 1, "the message returned on the old cluster was returned again"


class _Reopening:
    """Stands in for the SDK Client whose cluster's pulsar.Client makes the replacement reader."""

    def __init__(self, made: _Inner) -> None:
        self.gate = SwitchGate(threading.RLock())
        self.inner = self
        self.made = made
        self.calls: list[tuple[Any, dict[str, Any]]] = []

    def create_reader(self, topic: str, start: Any, **kwargs: Any) -> _Inner:
        self.calls.append((start, kwargs))
        return self.made


class _Closing(_Inner):
    closed = False

    def close(self) -> None:
        self.closed = True


def test_a_stalled_reader_is_replaced_by_one_after_the_last_message_read() -> None:
    sixth = _Message(RecordId(bytes(16), 0, 5), 1, 5)
    after = _Closing(sixth)
    client = _Reopening(after)
    stalled = _Closing()
    reader = _reader(cast(Any, client), stalled)
    reader._kwargs = {"start_message_id_inclusive": True, "reader_name": "r"}
    last = pulsar.MessageId(0, 1, 4, -1)
    reader._replace_stalled(cast(Any, stalled), last)
    assert client.calls == [(last, {"start_message_id_inclusive": False, "reader_name": "r"})]
    assert reader._inner is after and stalled.closed
    assert reader.read_next(100) is sixth, "read on from the replacement"


def test_no_replacement_while_the_client_switches_or_for_a_reader_already_replaced() -> None:
    made = _Closing()
    client = _Reopening(made)
    current = _Closing()
    reader = _reader(cast(Any, client), current)
    client.gate.close()
    reader._replace_stalled(cast(Any, current), None)
    client.gate.open()
    reader._replace_stalled(cast(Any, _Closing()), None)  # not the current reader (a switch moved it)
    assert client.calls == [] and reader._inner is current and not current.closed
