"""Where a Pulsar route's query starts: ``startingOffsets`` words and message ids by topic or partition."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import pytest

from hotstandby.errors import ConfigError
from hotstandby.spark_integration.pulsar.plan import starting_ids
from hotstandby.spark_integration.source.options import EARLIEST, LATEST, MessageIds

T = "persistent://public/default/t"
PARTS = [f"{T}-partition-0", f"{T}-partition-1", "persistent://public/default/u"]


class Cluster:
    """Answers last_ids as a cluster whose partitions end at "ff" + their index."""

    def last_ids(self, topics: Iterable[str]) -> dict[str, str]:
        return {t: f"ff{PARTS.index(t)}" for t in topics}


def start(starting: str | MessageIds) -> dict[str, str]:
    return starting_ids(cast(Any, Cluster()), PARTS, starting)


def test_words_start_every_partition_at_its_first_or_after_its_last_message() -> None:
    assert start(EARLIEST) == dict.fromkeys(PARTS, "")
    assert start(LATEST) == {PARTS[0]: "ff0", PARTS[1]: "ff1", PARTS[2]: "ff2"}


def test_message_ids_name_a_partition_or_a_topic_by_full_or_short_name() -> None:
    got = start(MessageIds({f"{T}-partition-1": "0801", "u": EARLIEST}))
    assert got == {PARTS[0]: "ff0", PARTS[1]: "0801", PARTS[2]: ""}, "a partition not named starts at the latest"
    assert start(MessageIds({T: "earliest"})) == {PARTS[0]: "", PARTS[1]: "", PARTS[2]: "ff2"}


def test_a_start_for_a_topic_not_subscribed_is_refused() -> None:
    with pytest.raises(ConfigError, match="persistent://public/default/v"):
        start(MessageIds({"v": "0801"}))
