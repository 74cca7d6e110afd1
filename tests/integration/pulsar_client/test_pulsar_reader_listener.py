"""``create_reader(reader_listener=...)`` of the Pulsar facade on the reference cluster: every
message once, on a thread of the reader's own, across a switch."""

from __future__ import annotations

import threading
import time
from typing import Any

import pulsar
import pytest

from hotstandby.adapters.pulsar import Client
from hotstandby.configcenter import ConfigCenter
from tests.integration.pulsar_helpers import ROUTE
from tests.support import wait_for


def send(client: Client, topic: str, values: list[str]) -> None:
    producer = client.create_producer(topic)
    for v in values:
        producer.send_async(v.encode(), None)
    producer.flush()
    producer.close()  # nothing to re-send at a switch


def test_a_reader_listener_gets_every_message_once_across_a_switch(
    client: Client, center: ConfigCenter, topic: str
) -> None:
    send(client, topic, [f"a{i}" for i in range(50)])
    got: list[str] = []
    seen: set[tuple[int, str]] = set()  # (the reader given, the thread)
    lock = threading.Lock()

    def listener(reader: Any, msg: pulsar.Message) -> None:
        with lock:
            got.append(msg.data().decode())
            seen.add((id(reader), threading.current_thread().name))

    reader = client.create_reader(topic, pulsar.MessageId.earliest, reader_listener=listener)
    wait_for(lambda: len(got) >= 50, 30, "the listener to get pulsar-a's messages")
    center.switch(ROUTE, "pulsar-b", reason="test")
    wait_for(lambda: client.cluster == "pulsar-b", 30, "the client to move")
    send(client, topic, [f"b{i}" for i in range(20)])
    wait_for(lambda: len(got) >= 70, 30, "the listener to get pulsar-b's messages")
    deadline = time.monotonic() + 1.5  # a bounded wait for more than there is
    while time.monotonic() < deadline and len(got) == 70:
        time.sleep(0.05)
    with lock:
        assert got == [f"a{i}" for i in range(50)] + [f"b{i}" for i in range(20)], "each once, in order"
        assert seen == {(id(reader), "hotstandby-reader-listener")}
    assert reader.skipped >= 50, "pulsar-b's copies of what was read were skipped"
    with pytest.raises(pulsar.InvalidConfiguration):
        reader.read_next(100)
    reader.close()
    send(client, topic, ["late"])
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert "late" not in got, "a closed reader's listener was called"
        time.sleep(0.05)
