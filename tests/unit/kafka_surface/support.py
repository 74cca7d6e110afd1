"""What the Kafka surface tests share: a broker address nobody listens on, the raw clients'
and the route's configurations, and how an outcome is compared."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from confluent_kafka import TopicPartition


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


BROKER = f"127.0.0.1:{_closed_port()}"
ROUTE = {"hotstandby.route": "r", "hotstandby.etcd": f"127.0.0.1:{_closed_port()}"}
RAW = {"bootstrap.servers": BROKER}


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    """(exception type, message) of ``call()``, or ("ok", repr of the result)."""
    try:
        result = call()
    except Exception as exc:  # the point: any type, compared with the raw client's
        return type(exc).__name__, str(exc)
    return "ok", repr(result)


def same(raw: Callable[[], Any], facade: Callable[[], Any]) -> tuple[str, str]:
    expected, got = outcome(raw), outcome(facade)
    assert got == expected
    return got


PRODUCER_CALLS: dict[str, Callable[[Any], Any]] = {
    "produce": lambda p: p.produce("t", b"v", partition=0),
    "produce (metadata)": lambda p: p.produce("t", b"v"),
    "poll": lambda p: p.poll(0),
    "flush": lambda p: p.flush(0),
    "purge": lambda p: p.purge(),
    "list_topics": lambda p: p.list_topics(timeout=0.1),
    "cluster_id": lambda p: p.cluster_id(0.1),
    "set_sasl_credentials": lambda p: p.set_sasl_credentials("u", "p"),
    "produce_batch": lambda p: p.produce_batch("t", [{"value": b"v", "partition": 0}]),
    "init_transactions": lambda p: p.init_transactions(0.1),
    "begin_transaction": lambda p: p.begin_transaction(),
    "commit_transaction": lambda p: p.commit_transaction(0.1),
    "abort_transaction": lambda p: p.abort_transaction(0.1),
}


TP = TopicPartition("t", 0)
CONSUMER_CALLS: dict[str, Callable[[Any], Any]] = {
    "poll": lambda c: c.poll(0),
    "consume": lambda c: c.consume(1, 0),
    "subscribe": lambda c: c.subscribe(["t"]),
    "unsubscribe": lambda c: c.unsubscribe(),
    "assignment": lambda c: c.assignment(),
    "commit": lambda c: c.commit(),
    "store_offsets": lambda c: c.store_offsets(offsets=[TopicPartition("t", 0, 1)]),
    "committed": lambda c: c.committed([TP]),
    "position": lambda c: c.position([TP]),
    "pause": lambda c: c.pause([TP]),
    "resume": lambda c: c.resume([TP]),
    "memberid": lambda c: c.memberid(),
    "consumer_group_metadata": lambda c: c.consumer_group_metadata(),
    "get_watermark_offsets": lambda c: c.get_watermark_offsets(TP, timeout=0.1),
    "offsets_for_times": lambda c: c.offsets_for_times([TopicPartition("t", 0, 0)], timeout=0.1),
    "list_topics": lambda c: c.list_topics(timeout=0.1),
    "cluster_id": lambda c: c.cluster_id(0.1),
    "set_sasl_credentials": lambda c: c.set_sasl_credentials("u", "p"),
    "assign": lambda c: c.assign([TP]),
    "unassign": lambda c: c.unassign(),
    "incremental_assign": lambda c: c.incremental_assign([TP]),
    "incremental_unassign": lambda c: c.incremental_unassign([TP]),
    "seek": lambda c: c.seek(TopicPartition("t", 0, 0)),
}
