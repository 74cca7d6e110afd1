"""What the Pulsar consumer hands out when copies of one message meet (no broker: messages are
stand-ins with pulsar.Message's accessors)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar.adapter import encode_identity
from hotstandby.adapters.pulsar.consumer.acceptance import Acceptance
from hotstandby.adapters.pulsar.consumer.acknowledging import Acknowledger
from hotstandby.adapters.pulsar.consumer.consumer import Consumer
from hotstandby.adapters.pulsar.consumer.handed import HandedOut
from hotstandby.adapters.pulsar.consumer.subscription import SubscriptionState
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.failover.identity import HEADER, RecordId
from hotstandby.failover.switch_gate import SwitchGate
from hotstandby.logs import Seldom, get_logger

TOPIC = "persistent://public/default/t"


class _Id:
    def __init__(self, ledger: int, entry: int) -> None:
        self._at = (ledger, entry)

    def ledger_id(self) -> int:
        return self._at[0]

    def entry_id(self) -> int:
        return self._at[1]

    def batch_index(self) -> int:
        return -1

    def partition(self) -> int:
        return -1


class _Message(pulsar.Message):
    """A message stored at ``ledger:entry`` with identity ``rid``, delivered ``redeliveries`` times before."""

    def __init__(self, rid: RecordId, ledger: int, entry: int, redeliveries: int = 0) -> None:
        self._props = {HEADER: encode_identity(rid)}
        self._id = _Id(ledger, entry)
        self._redeliveries = redeliveries

    def properties(self) -> dict[str, str]:
        return self._props

    def topic_name(self) -> str:
        return TOPIC

    def message_id(self) -> Any:
        return self._id

    def redelivery_count(self) -> int:
        return self._redeliveries

    def publish_timestamp(self) -> int:
        return 1


class _Broker:
    """Stands in for pulsar.Consumer: takes acknowledgements (and notes them)."""

    def __init__(self) -> None:
        self.acked: list[tuple[str, object]] = []

    def acknowledge(self, message: object) -> None:
        self.acked.append(("individual", message))

    def acknowledge_cumulative(self, message: object) -> None:
        self.acked.append(("cumulative", message))

    def negative_acknowledge(self, message: object) -> None:
        self.acked.append(("negative", message))


def _acknowledger(made: Consumer, *, cumulative: bool) -> Acknowledger:
    return Acknowledger(made._state, made._out, made._topics, cumulative=cumulative, shared=False,
                        current=lambda: made._inner, check_open=made._check_open, seldom=Seldom(get_logger("test")))  # fmt: skip


@pytest.fixture
def consumer() -> Iterator[Consumer]:
    state = SubscriptionState(ConfigCenter(MemoryStore(), "/t"), TOPIC, "s", "me")
    made = Consumer.__new__(Consumer)  # the receiving logic alone, without a client
    made._state, made._lock, made._topic = state, state.lock, TOPIC
    made._topics, made._multi = state.topics, False
    made._out, made._inner, made._track_origins = HandedOut(), _Broker(), False
    made._held, made._cumulative = [], False
    made._acceptance = Acceptance(state, made._out, state.topics, track_origins=False, cumulative=False)
    made._gate, made._closed = SwitchGate(threading.RLock()), False  # the client's gate, on the client's lock
    made._acks = _acknowledger(made, cumulative=False)
    yield made
    state.close()


def test_a_redelivered_copy_is_not_handed_out_while_its_twin_is(consumer: Consumer) -> None:
    """After a switch a message is stored twice on the new cluster (replicated copy, re-sent
    twin). The copy is handed out and negatively acknowledged; the twin is handed out; then the
    copy comes again: the twin, still being processed, stands for it."""
    rid = RecordId(bytes(16), 0, 7)
    copy, twin = _Message(rid, 1, 1), _Message(rid, 2, 5)
    assert consumer._accept(copy) is copy
    consumer.negative_acknowledge(copy)
    assert consumer._accept(twin) is twin
    assert consumer._accept(_Message(rid, 1, 1, redeliveries=1)) is None, "handed out twice"
    assert consumer.filtered == 1


def test_the_same_message_redelivered_after_an_ack_timeout_is_handed_out_again(consumer: Consumer) -> None:
    rid = RecordId(bytes(16), 0, 8)
    first = _Message(rid, 3, 4)
    assert consumer._accept(first) is first
    assert consumer._accept(_Message(rid, 3, 4)) is None, "dispatched twice: handed out already"
    again = _Message(rid, 3, 4, redeliveries=1)
    assert consumer._accept(again) is again


def _exclusive(consumer: Consumer, count: int) -> list[_Message]:
    """The fixture's consumer as one that reads its topic alone (Exclusive, not partitioned),
    and ``count`` messages it handed out."""
    consumer._cumulative = True
    consumer._acks = _acknowledger(consumer, cumulative=True)
    consumer._acceptance = Acceptance(consumer._state, consumer._out, consumer._state.topics, track_origins=False,
                                      cumulative=True)  # fmt: skip
    consumer._acceptance.slot = (TOPIC, 0)
    consumer._state._stop.set()  # its flusher: the test stores and acknowledges itself
    consumer._state._flusher.join()
    messages = [_Message(RecordId(bytes(16), 0, i), 1, i) for i in range(count)]
    for msg in messages:
        assert consumer._accept(msg) is msg
    return messages


def test_acknowledgements_of_a_settled_prefix_reach_the_broker_as_one_cumulative_one(consumer: Consumer) -> None:
    messages = _exclusive(consumer, 5)
    broker: _Broker = consumer._inner
    for msg in (messages[3], messages[0], messages[2], messages[1]):  # out of order
        consumer.acknowledge(msg)
    consumer._state.flush()
    assert broker.acked == [("cumulative", messages[3])]
    consumer.acknowledge(messages[4])
    consumer._state.flush()
    assert broker.acked[1:] == [("cumulative", messages[4])]


def test_acknowledgements_behind_a_gap_go_to_the_broker_one_by_one(consumer: Consumer) -> None:
    messages = _exclusive(consumer, 4)
    broker: _Broker = consumer._inner
    consumer.acknowledge(messages[1])
    consumer.acknowledge(messages[2])
    consumer._state.flush()
    # messages[0] is still being processed: a cumulative acknowledgement would drop it.
    assert sorted(broker.acked, key=lambda a: id(a[1])) == sorted(
        [("individual", messages[1]), ("individual", messages[2])], key=lambda a: id(a[1])
    )
    broker.acked.clear()
    consumer.negative_acknowledge(messages[0])  # given back: it comes again after the others
    consumer.acknowledge(messages[3])
    consumer._state.flush()
    assert ("individual", messages[3]) in broker.acked
    assert not [a for a in broker.acked if a[0] == "cumulative"]


def test_a_message_received_while_a_switch_fails_is_handed_out_afterwards(consumer: Consumer) -> None:
    """receive() got it from the consumer in use just as a switch began: not handed out then,
    not dropped either — the switch fails, the old cluster stays, and it comes next."""
    msg = _Message(RecordId(bytes(16), 0, 9), 1, 9)
    consumer._gate.close()
    with consumer._lock:
        consumer._hold(consumer._inner, [msg])
    assert consumer._take_held() is None, "not while switching"
    consumer._gate.open()  # the switch failed
    assert consumer._take_held() is msg
    assert consumer._take_held() is None
