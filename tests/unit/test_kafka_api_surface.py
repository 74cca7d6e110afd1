"""The facades have confluent-kafka's attributes, and only the extra ones docs/kafka-api.md
lists (with a reason): the list in the docs is the one source, read here."""

from __future__ import annotations

import re
from pathlib import Path

import confluent_kafka
import pytest

from hotstandby.adapters.kafka import Consumer, Producer

DOC = Path(__file__).resolve().parents[2] / "docs" / "kafka-api.md"
# Dunder methods that are part of a client's behaviour (the rest are object's).
BEHAVIOUR = frozenset({"__len__", "__bool__", "__enter__", "__exit__", "__iter__", "__next__", "__call__"})
ITEM = re.compile(r"^\* `(Producer|Consumer)\.(\w+)` — \S.*$")


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_") or name in BEHAVIOUR}


def documented(heading: str) -> dict[str, set[str]]:
    """``{"Producer": names, "Consumer": names}`` listed (each with a reason) under ``heading``."""
    text = DOC.read_text()
    section = text.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
    out: dict[str, set[str]] = {"Producer": set(), "Consumer": set()}
    for line in section.splitlines():
        if line.startswith("* "):
            match = ITEM.match(line)
            assert match, f"docs/kafka-api.md: not a `Class.name` — reason item: {line!r}"
            out[match[1]].add(match[2])
    return out


@pytest.mark.parametrize(
    ("name", "facade", "raw"),
    [("Producer", Producer, confluent_kafka.Producer), ("Consumer", Consumer, confluent_kafka.Consumer)],
)
def test_the_facades_differ_from_confluent_kafka_only_as_documented(name: str, facade: type, raw: type) -> None:
    assert public(facade) - public(raw) == documented("Only in the facades")[name]
    assert public(raw) - public(facade) == documented("Only in confluent-kafka")[name]


def test_every_method_is_in_the_tables() -> None:
    text = DOC.read_text()
    for cls in (confluent_kafka.Producer, confluent_kafka.Consumer):
        for name in public(cls) - BEHAVIOUR:
            assert f"`{name}" in text, f"docs/kafka-api.md does not say what {cls.__name__}.{name} does"
