"""When a consumer asks about subscribed copies that were missing, and what it learns."""

from __future__ import annotations

import itertools
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from hotstandby.adapters.kafka.consumer import late_copies
from hotstandby.adapters.kafka.consumer.late_copies import LateCopies
from hotstandby.configcenter.documents import ClusterSpec


class FakeAdmin:
    """describe_topics as confluent-kafka's: a future per topic, settled by the test."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.futures: dict[str, Future[Any]] = {}

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Future[Any]]:
        self.asked.append(list(topics.topic_names))
        self.futures = {t: Future() for t in topics.topic_names}
        return self.futures

    def settle(self, there: set[str]) -> None:
        for topic, future in self.futures.items():
            if topic in there:
                future.set_result(topic)
            else:
                future.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    fake = FakeAdmin()
    monkeypatch.setattr(late_copies, "shared_admin", lambda spec: fake)
    return fake


SPEC = ClusterSpec(name="kafka-b", kind="kafka", url="127.0.0.1:1")


def test_nothing_is_asked_while_no_copy_is_missing(admin: FakeAdmin) -> None:
    now = [0.0]
    copies = LateCopies(clock=lambda: now[0])
    for now[0] in (0.0, 5.0, 100.0):
        assert copies.appeared(SPEC) == set()
    assert admin.asked == []


def test_a_missing_copy_is_asked_about_at_growing_intervals_until_it_is_there(admin: FakeAdmin) -> None:
    now = [0.0]
    copies = LateCopies(clock=lambda: now[0])
    copies.missing(["kafka-a.orders"])
    assert copies.appeared(SPEC) == set() and admin.asked == [], "not at once"
    asked_at = []
    for step in range(200):
        now[0] = step * 0.5
        if copies.appeared(SPEC) == set() and admin.futures and not any(f.done() for f in admin.futures.values()):
            asked_at.append(now[0])
            admin.settle(set())
    gaps = [b - a for a, b in itertools.pairwise(asked_at)]
    assert asked_at[0] == 1.0
    assert gaps == sorted(gaps) and gaps[-1] <= 30.5 and gaps[0] < gaps[-1], gaps
    copies.appeared(SPEC)  # ask once more
    now[0] += 100
    copies.appeared(SPEC)
    admin.settle({"kafka-a.orders"})
    assert copies.appeared(SPEC) == {"kafka-a.orders"}
    now[0] += 100
    assert copies.appeared(SPEC) == set() and len(admin.asked) == len(asked_at) + 1, "nothing missing: no question"


def test_an_unanswered_question_is_asked_again_later(admin: FakeAdmin) -> None:
    now = [0.0]
    copies = LateCopies(clock=lambda: now[0])
    copies.missing(["kafka-a.orders", "kafka-a.payments"])
    now[0] = 1.0
    copies.appeared(SPEC)
    assert admin.asked == [["kafka-a.orders", "kafka-a.payments"]]
    now[0] = 5.0
    assert copies.appeared(SPEC) == set(), "waits for the answer"
    now[0] = 11.5
    assert copies.appeared(SPEC) == set(), "given up: asked again later"
    now[0] = 14.0
    copies.appeared(SPEC)
    assert len(admin.asked) == 2
    admin.settle({"kafka-a.payments"})
    assert copies.appeared(SPEC) == {"kafka-a.payments"}


def test_a_new_subscription_forgets_what_was_missing(admin: FakeAdmin) -> None:
    now = [0.0]
    copies = LateCopies(clock=lambda: now[0])
    copies.missing(["kafka-a.orders"])
    copies.forget()
    now[0] = 10.0
    assert copies.appeared(SPEC) == set() and admin.asked == []
