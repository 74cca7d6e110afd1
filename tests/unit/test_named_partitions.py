"""Which physical partitions a TopicPartition from the application names (assign, seek,
commit): a logical name stands for the topic and its copies; an explicit offset names one
partition — the copy a position was taken from when the message came from the copy."""

from __future__ import annotations

from typing import Any, cast

from confluent_kafka import OFFSET_BEGINNING, OFFSET_INVALID, TopicPartition

from hotstandby.adapters.kafka.consumer.named_partitions import named_slot, physical_assignment
from hotstandby.adapters.kafka.consumer.state import ConsumerState
from hotstandby.failover.identity import RecordId
from hotstandby.failover.ledger.ack_tracker import AckTracker


class _State:
    """What named_partitions reads of a consumer's state."""

    def __init__(self, logical: dict[str, str]) -> None:
        self.acks = AckTracker()
        self.logical = logical

    def logical_of(self, physical: str) -> str:
        return self.logical.get(physical, physical)


def state(**read: range) -> Any:
    s = _State({"orders": "orders", "kafka-b.orders": "orders"})
    for physical, positions in read.items():
        topic = physical.replace("_", "-").replace("-orders", ".orders")
        for p in positions:
            s.acks.offer("orders", (topic, 0), p, RecordId(bytes(16), 0, p + (1000 if topic != "orders" else 0)), 1)
    return cast(ConsumerState, s)


def test_an_offset_read_from_the_copy_only_names_the_copy() -> None:
    s = state(orders=range(0, 5), kafka_b_orders=range(0, 50))
    assert named_slot(s, "orders", 0, 30) == ("kafka-b.orders", 0), "msg.topic() is logical, the record the copy's"
    assert named_slot(s, "orders", 0, 3) == ("orders", 0), "read on both: the topic of that name"
    assert named_slot(s, "orders", 0, 70) == ("orders", 0), "read nowhere: the topic of that name"
    assert named_slot(s, "kafka-b.orders", 0, 3) == ("kafka-b.orders", 0), "a copy named by its own name"


def test_a_logical_partition_stands_for_the_topic_and_its_copies() -> None:
    s = state()
    wanted = physical_assignment(s, [TopicPartition("orders", 0, OFFSET_BEGINNING)], ["kafka-b."])
    assert wanted.partitions() == [
        TopicPartition("kafka-b.orders", 0, OFFSET_BEGINNING), TopicPartition("orders", 0, OFFSET_BEGINNING)
    ]  # fmt: skip
    assert wanted.logical_keys() == {("orders", 0)}
    explicit = physical_assignment(s, [TopicPartition("orders", 1, 42)], ["kafka-b."])
    assert explicit.partitions() == [
        TopicPartition("kafka-b.orders", 1, OFFSET_INVALID),
        TopicPartition("orders", 1, 42),
    ]
    copy = physical_assignment(s, [TopicPartition("kafka-b.orders", 2, 7)], ["kafka-b."])
    assert copy.partitions() == [TopicPartition("kafka-b.orders", 2, 7), TopicPartition("orders", 2, OFFSET_INVALID)]
    assert copy.names == {"orders": "orders", "kafka-b.orders": "orders"}
