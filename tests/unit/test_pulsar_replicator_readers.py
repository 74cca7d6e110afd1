"""A topic the source cannot serve is set aside with its own backoff; the others go on. A
reader that skipped entries is opened again at once."""

from __future__ import annotations

import pulsar

from hotstandby.adapters.pulsar.replicator.readers import SourceReaders


class FakeMessage:
    """The n-th value of a topic, stored in entry n of ledger 7."""

    def __init__(self, value: str, entry: int) -> None:
        self.value, self.entry = value, entry

    def message_id(self) -> pulsar.MessageId:
        return pulsar.MessageId(-1, 7, self.entry, -1)


class FakeReader:
    """Serves ``values`` (from entry ``start`` on, leaving out the entries in ``skip``) then
    nothing; ``broken`` fails every availability check as pulsar-lite does for a topic it
    cannot load (``getLastMessageId``: UnknownError)."""

    def __init__(self, values: list[str], broken: bool = False, start: int = 0, skip: frozenset[int] = frozenset()):
        self.broken, self.closed = broken, False
        self.messages = [FakeMessage(v, n) for n, v in enumerate(values) if n >= start and n not in skip]

    def has_message_available(self) -> bool:
        if self.broken:
            raise pulsar.PulsarException("Pulsar error: UnknownError")
        return bool(self.messages)

    def read_next(self, timeout_millis: int | None = None) -> pulsar.Message:
        return self.messages.pop(0)  # type: ignore[return-value]  # the flow only passes it on

    def close(self) -> None:
        self.closed = True


class Source:
    def __init__(self) -> None:
        self.now = 0.0
        self.broken = {"t-bad"}
        self.data = {"t-bad": ["x0"], "t-good": ["g0", "g1"], "t-late": ["l0"]}
        self.opened: list[str] = []

    def open(self, part: str) -> FakeReader:
        self.opened.append(part)
        return FakeReader(self.data[part], broken=part in self.broken)


def readers(source: Source) -> SourceReaders:
    failures: list[str] = []
    r = SourceReaders("f", source.open, on_failure=lambda part, exc: failures.append(part), clock=lambda: source.now)
    r.failures = failures  # type: ignore[attr-defined]
    return r


def test_a_broken_topic_does_not_hold_back_the_others() -> None:
    source = Source()
    r = readers(source)
    for part in ("t-bad", "t-good", "t-late"):
        r.add(part)
    batch = r.read_round(100, 1000)
    assert [m.value for _, m in batch] == ["g0", "g1", "l0"]
    assert r.stalled == ["t-bad"]
    assert r.failures == ["t-bad"]  # type: ignore[attr-defined]


def test_a_set_aside_topic_is_reopened_after_its_backoff_which_grows() -> None:
    source = Source()
    r = readers(source)
    r.add("t-bad")
    assert r.read_round(100, 1000) == [] and source.opened == ["t-bad"]
    source.now = 0.1
    assert r.read_round(100, 1000) == [] and source.opened == ["t-bad"]  # not before 0.2 s
    source.now = 0.2
    r.read_round(100, 1000)
    assert source.opened == ["t-bad", "t-bad"]  # reopened, failed again: 0.4 s now
    source.now = 0.5
    r.read_round(100, 1000)
    assert source.opened == ["t-bad", "t-bad"]
    source.broken.clear()
    source.now = 0.7
    assert [m.value for _, m in r.read_round(100, 1000)] == ["x0"]
    assert r.stalled == []


def test_a_round_stops_at_its_limit_and_rewind_reopens_every_reader() -> None:
    source = Source()
    r = readers(source)
    r.add("t-good")
    r.add("t-late")
    assert [m.value for _, m in r.read_round(1, 1000)] == ["g0"]
    source.broken = set()
    r.rewind()
    assert source.opened == ["t-good", "t-late", "t-good", "t-late"]


def test_a_reader_that_skipped_entries_is_opened_again_after_what_was_read() -> None:
    """The first reader of t-live misses entries 2 and 3 (a chunked message pulsar-client
    dropped); the round ends before entry 4, and the next reader starts after entry 1."""
    values = [f"v{n}" for n in range(6)]
    opened: list[int] = []

    def open_reader(part: str) -> FakeReader:
        start = 2 if opened else 0  # the flow's progress: after entry 1, once copied
        opened.append(start)
        return FakeReader(values, start=start, skip=frozenset({2, 3}) if len(opened) == 1 else frozenset())

    r = SourceReaders("f", open_reader, clock=lambda: 0.0)
    r.add("t-live")
    assert [m.value for _, m in r.read_round(100, 1000)] == ["v0", "v1"]
    assert [m.value for _, m in r.read_round(100, 1000)] == ["v2", "v3", "v4", "v5"]
    assert opened == [0, 2] and r.rereads == 1


def test_a_chunked_message_spans_its_entries_and_a_batch_shares_one() -> None:
    from hotstandby.adapters.pulsar.message_ids import entries_of

    assert entries_of(pulsar.MessageId(-1, 7, 3, -1)) == (7, 3, 3)
    assert entries_of(pulsar.MessageId(-1, 7, 3, 5)) == (7, 3, 3)
    # MessageIdData{ledgerId: 7, entryId: 3, first_chunk_message_id: {ledgerId: 7, entryId: 1}}
    chunked = pulsar.MessageId.deserialize(bytes([0x08, 7, 0x10, 3, 0x3A, 4, 0x08, 7, 0x10, 1]))
    assert str(chunked) == "(7,1,-1,-1);(7,3,-1,-1)" and entries_of(chunked) == (7, 1, 3)


def test_a_message_id_says_whether_its_batch_goes_on() -> None:
    from hotstandby.adapters.pulsar.message_ids import more_in_batch

    def batched(index: int, size: int) -> pulsar.MessageId:  # MessageIdData{7, 0, batch_index, batch_size}
        return pulsar.MessageId.deserialize(bytes([0x08, 7, 0x10, 0, 0x20, index, 0x30, size]))

    assert more_in_batch(batched(0, 20)) and more_in_batch(batched(18, 20))
    assert not more_in_batch(batched(19, 20))
    assert not more_in_batch(pulsar.MessageId(-1, 7, 3, -1))
