"""Which start position a Kafka consumer takes on the cluster it moved to (pure logic: the
broker lookups are answered by a stand-in)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition

from hotstandby.adapters.kafka.consumer.start_positions import StartPositions, Visit
from hotstandby.adapters.kafka.mm2.codec import Checkpoint, OffsetSync
from hotstandby.configcenter.documents import ClusterSpec, Link

A, B = "kafka-a", "kafka-b"
LINKS = {(A, B): Link(source=A, target=B), (B, A): Link(source=B, target=A)}


class Broker:
    """Answers what StartPositions asks a consumer: committed offsets, timestamps, watermarks."""

    def __init__(self, committed: dict[tuple[str, int], int] | None = None, by_time: int = -1, low: int = 0) -> None:
        self.committed_offsets = committed or {}
        self.by_time, self.low = by_time, low
        self.asked_times: list[int] = []

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.committed_offsets.get((tp.topic, tp.partition), -1001))
                for tp in tps]  # fmt: skip

    def offsets_for_times(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.asked_times += [tp.offset for tp in tps]
        return [TopicPartition(tp.topic, tp.partition, self.by_time) for tp in tps]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        return self.low, 10_000


def starts(
    broker: Broker, previous: Visit, internal: dict[str, list[Any]] | None = None, *, answered: bool = False
) -> StartPositions:
    """``answered``: the cluster left (kafka-a) answered at the switch."""
    s = StartPositions(group="g", spec=ClusterSpec(name=B, kind="kafka", url="127.0.0.1:1"), previous=previous,
                       links=LINKS, skew_ms=5000, consumer=broker,  # type: ignore[arg-type]
                       previous_spec=ClusterSpec(name=A, kind="kafka", url="127.0.0.1:2") if answered else None)  # fmt: skip

    # The MM2 internal topics hold ``internal`` and nothing else (a topic read on another
    # cluster than kafka-b is keyed "cluster:topic"): no lookup reaches a broker.
    def read(kind: str, topic: str, decode: Any, on: ClusterSpec | None = None) -> list[Any]:
        return list((internal or {}).get(topic if on is None else f"{on.name}:{topic}", []))

    s._read = read  # type: ignore[method-assign]
    return s


def test_a_copy_starts_at_the_newest_checkpoint_of_the_group() -> None:
    cps = [Checkpoint("g", "kafka-a.orders", 0, 100, 90), Checkpoint("g", "kafka-a.orders", 0, 200, 180),
           Checkpoint("other", "kafka-a.orders", 0, 900, 900)]  # fmt: skip
    p = starts(Broker(), Visit(A), {"kafka-a.checkpoints.internal": cps}).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (180, "mm2-checkpoint")


def test_the_furthest_exact_position_wins_over_an_older_commit() -> None:
    cps = [Checkpoint("g", "kafka-a.orders", 0, 200, 180)]
    broker = Broker(committed={("kafka-a.orders", 0): 50})
    p = starts(broker, Visit(A), {"kafka-a.checkpoints.internal": cps}).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (180, "mm2-checkpoint")
    broker.committed_offsets[("kafka-a.orders", 0)] = 300
    p = starts(broker, Visit(A), {"kafka-a.checkpoints.internal": cps}).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (300, "committed")


def test_a_copy_starts_where_the_offset_syncs_on_the_cluster_left_put_the_groups_position() -> None:
    # MM2 keeps the syncs of flow kafka-a -> kafka-b on kafka-a; no checkpoint was emitted yet.
    syncs = [OffsetSync("orders", 0, 0, 0), OffsetSync("orders", 0, 100, 98), OffsetSync("orders", 0, 125, 123),
             OffsetSync("orders", 0, 300, 298), OffsetSync("orders", 1, 130, 5)]  # fmt: skip
    internal = {"kafka-a:mm2-offset-syncs.kafka-b.internal": syncs,
                "kafka-a.checkpoints.internal": [Checkpoint("g", "kafka-a.orders", 0, 50, 48)]}  # fmt: skip
    previous = Visit(A, positions={("orders", 0): 130})
    p = starts(Broker(), previous, internal, answered=True).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (124, "mm2-offset-sync")
    previous = Visit(A, positions={("orders", 0): 125})
    p = starts(Broker(), previous, internal, answered=True).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (123, "mm2-offset-sync")
    # kafka-a did not answer: its syncs are out of reach, the older checkpoint is what is left.
    p = starts(Broker(), previous, internal).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (48, "mm2-checkpoint")


def test_the_offset_syncs_of_a_recreated_copy_forget_the_older_ones() -> None:
    syncs = [OffsetSync("orders", 0, 100, 100), OffsetSync("orders", 0, 150, 3)]
    internal = {"kafka-a:mm2-offset-syncs.kafka-b.internal": syncs}
    p = starts(Broker(low=0), Visit(A, positions={("orders", 0): 120}), internal, answered=True).choose(
        "kafka-a.orders", 0, "orders"
    )
    assert p is not None and (p.position, p.strategy) == (0, "beginning")


def test_failback_translates_the_position_on_the_copy_back_through_the_offset_syncs() -> None:
    # The group read kafka-b's "orders" on kafka-a as "kafka-b.orders" up to offset 75 there.
    syncs = [OffsetSync("orders", 0, 100, 40), OffsetSync("orders", 0, 150, 70), OffsetSync("orders", 0, 160, 80)]
    previous = Visit(A, positions={("kafka-b.orders", 0): 75})
    p = starts(Broker(), previous, {"mm2-offset-syncs.kafka-a.internal": syncs}).choose("orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (151, "mm2-reverse-sync")


def test_without_exact_data_a_timestamp_seek_minus_the_skew_then_the_beginning() -> None:
    broker = Broker(by_time=42)
    previous = Visit(A, timestamps={("orders", 0): 1_000_000})
    p = starts(broker, previous).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (42, "timestamp")
    assert broker.asked_times == [1_000_000 - 5000]
    # Nothing known about this stream: no guessing, the beginning.
    p = starts(Broker(by_time=42, low=7), Visit(A)).choose("kafka-a.orders", 0, "orders")
    assert p is not None and (p.position, p.strategy) == (7, "beginning")


def test_missing_or_foreign_data_is_ignored() -> None:
    # Checkpoints of another topic and syncs of another partition say nothing about ours.
    internal = {"kafka-a.checkpoints.internal": [Checkpoint("g", "kafka-a.other", 0, 5, 5)],
                "mm2-offset-syncs.kafka-a.internal": [OffsetSync("orders", 1, 100, 40)]}  # fmt: skip
    previous = Visit(A, positions={("kafka-b.orders", 0): 75})
    for topic in ("kafka-a.orders", "orders"):
        p = starts(Broker(low=3), previous, internal).choose(topic, 0, "orders")
        assert p is not None and (p.position, p.strategy) == (3, "beginning")


def test_the_lookups_read_the_cluster_with_its_own_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    def read_to_end(config: dict[str, Any], topic: str, **_: Any) -> list[Any]:
        seen.append(config)
        return []

    monkeypatch.setattr("hotstandby.adapters.kafka.consumer.start_positions.read_to_end", read_to_end)
    tls = ClusterSpec(name=B, kind="kafka", url="127.0.0.1:1", consumer={"fetch.wait.max.ms": 50},
                      client={"security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem"})  # fmt: skip
    s = StartPositions(group="g", spec=tls, previous=Visit(A), links=LINKS, skew_ms=5000,
                       consumer=Broker())  # type: ignore[arg-type]  # fmt: skip
    s.choose("kafka-a.orders", 0, "orders")
    assert seen and all(c["security.protocol"] == "SSL" and c["ssl.ca.location"] == "/etc/ca.pem" for c in seen)
    assert seen[0]["bootstrap.servers"] == "127.0.0.1:1" and seen[0]["fetch.wait.max.ms"] == 50
