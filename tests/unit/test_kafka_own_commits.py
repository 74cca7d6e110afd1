"""A consumer reads back its own synchronous commits (adapters/kafka/consumer/own_commits.py): the broker
is asked again while it shows an older offset, within a limit, and a broker that keeps no
commit metadata is learnt once."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import TopicPartition

from hotstandby.adapters.kafka.consumer.own_commits import OwnCommits

P0 = [TopicPartition("t", 0)]


class Broker:
    """A raw consumer whose ``committed`` answers from ``answers`` in turn (the last one for good)."""

    def __init__(self, *answers: tuple[int, str | None]) -> None:
        self.answers = list(answers)
        self.asked = 0

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.asked += 1
        offset, metadata = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return [TopicPartition("t", 0, offset) if metadata is None else TopicPartition("t", 0, offset, metadata)]


def test_an_older_offset_is_asked_again_until_the_commit_shows() -> None:
    broker, own = Broker((3, None), (3, None), (5, None)), OwnCommits()
    own.sent(broker, [TopicPartition("t", 0, 5)])
    assert [tp.offset for tp in own.read(broker, P0, 10, 5)] == [5]
    assert broker.asked == 3
    assert [tp.offset for tp in own.read(broker, P0, 10, 5)] == [5] and broker.asked == 4, "shown: not waited for again"


def test_a_commit_never_shown_is_given_up_after_the_limit_and_not_waited_for_again() -> None:
    broker, own = Broker((3, None)), OwnCommits()
    own.sent(broker, [TopicPartition("t", 0, 5)])
    started = time.monotonic()
    assert [tp.offset for tp in own.read(broker, P0, 10, 0.2)] == [3]
    assert 0.1 < time.monotonic() - started < 2
    asked = broker.asked
    own.read(broker, P0, 10, 0.2)
    assert broker.asked == asked + 1


def test_metadata_is_waited_for_until_a_broker_shows_it_never() -> None:
    broker, own = Broker((5, ""), (5, "m")), OwnCommits()
    own.sent(broker, [TopicPartition("t", 0, 5, "m")])
    assert [tp.metadata for tp in own.read(broker, P0, 10, 5)] == ["m"] and broker.asked == 2
    dropping = Broker((6, ""))  # keeps no metadata (Tansu)
    own.sent(dropping, [TopicPartition("t", 0, 6, "m")])
    own.read(dropping, P0, 10, 0.2)
    own.sent(dropping, [TopicPartition("t", 0, 6, "n")])
    asked = dropping.asked
    own.read(dropping, P0, 10, 0.2)
    assert dropping.asked == asked + 1, "learnt: the offset is enough on this broker"


def test_partitions_left_and_other_raw_consumers_are_not_waited_for() -> None:
    broker, own = Broker((3, None)), OwnCommits()
    own.sent(broker, [TopicPartition("t", 0, 5)])
    own.forget({("t", 0)})
    own.read(broker, P0, 10, 5)
    assert broker.asked == 1
    own.sent(broker, [TopicPartition("t", 0, 5)])
    other: Any = Broker((3, None))
    own.read(other, P0, 10, 5)
    assert other.asked == 1, "a raw consumer of another cluster: its offsets are not ours"
