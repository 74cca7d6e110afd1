"""A topic the source cannot serve is set aside with its own backoff; the others go on."""

from __future__ import annotations

import pulsar

from hotstandby.refcluster.replicators.pulsar.readers import SourceReaders


class FakeReader:
    """Serves ``values`` then nothing; ``broken`` fails every availability check as
    pulsar-lite does for a topic it cannot load (``getLastMessageId``: UnknownError)."""

    def __init__(self, values: list[str], broken: bool = False, connected: bool = True) -> None:
        self.values, self.broken, self.closed, self.connected = list(values), broken, False, connected

    def is_connected(self) -> bool:
        return self.connected

    def has_message_available(self) -> bool:
        if self.broken:
            raise pulsar.PulsarException("Pulsar error: UnknownError")
        return bool(self.values)

    def read_next(self, timeout_millis: int | None = None) -> pulsar.Message:
        return self.values.pop(0)  # type: ignore[return-value]  # the flow only passes it on

    def close(self) -> None:
        self.closed = True


class Source:
    def __init__(self) -> None:
        self.now = 0.0
        self.broken = {"t-bad"}
        self.disconnected: set[str] = set()
        self.data = {"t-bad": ["x0"], "t-good": ["g0", "g1"], "t-late": ["l0"]}
        self.opened: list[str] = []

    def open(self, part: str) -> FakeReader:
        self.opened.append(part)
        return FakeReader(self.data[part], broken=part in self.broken, connected=part not in self.disconnected)


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
    assert [v for _, v in batch] == ["g0", "g1", "l0"]
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
    assert [v for _, v in r.read_round(100, 1000)] == ["x0"]
    assert r.stalled == []


def test_a_round_stops_at_its_limit_and_rewind_reopens_every_reader() -> None:
    source = Source()
    r = readers(source)
    r.add("t-good")
    r.add("t-late")
    assert [v for _, v in r.read_round(1, 1000)] == ["g0"]
    source.broken = set()
    r.rewind()
    assert source.opened == ["t-good", "t-late", "t-good", "t-late"]


def test_a_reader_whose_connection_is_gone_is_set_aside_without_being_asked() -> None:
    """pulsar-client answers a disconnected reader's calls only after its operation timeout:
    the round must not wait on it (a broker killed and restarted left such readers behind)."""
    source = Source()
    source.broken = set()
    source.disconnected = {"t-bad"}
    r = readers(source)
    for part in ("t-bad", "t-good"):
        r.add(part)
    stale = r._readers["t-bad"]
    assert isinstance(stale, FakeReader)
    stale.has_message_available = None  # type: ignore[assignment,method-assign]  # must not be called
    assert [v for _, v in r.read_round(100, 1000)] == ["g0", "g1"]
    assert r.stalled == ["t-bad"] and stale.closed
    source.disconnected.clear()
    source.now += 1.0  # past its backoff: opened again, connected
    assert [v for _, v in r.read_round(100, 1000)] == ["x0"]
