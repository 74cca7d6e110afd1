"""Every parser of a config-center document turns any input into a ValidationError.

Property tests over arbitrary JSON and arbitrary bytes, per parser, plus the inputs that
broke them in practice: deep nesting, huge values, invalid UTF-8, lone surrogates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.errors import ValidationError
from hotstandby.failover.ledger.ledger import LedgerDocument
from hotstandby.failover.presence import list_clients, parse_presence

# JSON with the field names the parsers look at, so the search reaches past the first check.
_FIELDS = st.sampled_from(
    ["kind", "bootstrap.servers", "service_url", "client", "producer", "consumer", "active", "clusters",
     "epoch", "reason", "by", "at", "policy", "separator", "offset_syncs", "replicator", "v", "generation",
     "owner", "updated_at_ms", "sessions", "acked", "last_ack_ms", "cluster", "state", "switches",
     "last_switch_ms", "pid", "host", "role", "kafka", "pulsar", "kafka-a", "prefix", "source",
     "00ff", "AQEB", "pulsar://h:1", "h:1"]
)  # fmt: skip
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | _FIELDS
)
JSON = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_FIELDS | st.text(max_size=6), children, max_size=6)
    ),
    max_leaves=25,
)
# A document wrapped in n levels of nesting, as an object field or bare (n up to 5000).
NESTED = st.builds(
    lambda n, doc, field: (f'{{"{field}": ' * (n % 2) + "[" * n + json.dumps(doc) + "]" * n + "}" * (n % 2)).encode(),
    st.integers(min_value=0, max_value=5000),
    JSON,
    _FIELDS,
)
RAW = st.one_of(
    JSON.map(lambda doc: json.dumps(doc).encode()),
    NESTED,
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)

Parser = Callable[[bytes], Any]


def _presence(raw: bytes) -> Any:
    return parse_presence("/ns/clients/r/c", raw)


def _ledger(raw: bytes) -> Any:
    return LedgerDocument.from_json(raw, "/ns/ledgers/g/t/0")


PARSERS: dict[str, Parser] = {
    "cluster": lambda raw: ClusterSpec.from_json("kafka-a", raw),
    "route": lambda raw: Route.from_json("orders", raw),
    "link": lambda raw: Link.from_json("kafka-a", "kafka-b", raw),
    "ledger": _ledger,
    "presence": _presence,
}

DEEP = b"[" * 10_000 + b"]" * 10_000
NASTY = [
    DEEP,
    b'{"kind": ' + DEEP + b"}",
    b'{"active": "a", "clusters": ["a"], "epoch": 1, "reason": ' + b"[" * 5000 + b"}",
    b"\xff\xfe\xfd",
    b'{"active": "\xc3\x28"}',
    b'{"active": "a", "clusters": ["a"], "epoch": 1, "reason": "\\ud800"}',
    b'{"kind": "pulsar", "service_url": "pulsar://host-without-port"}',
    b'{"kind": "kafka", "bootstrap.servers": "h:\xc2\xb2"}',
    b'{"kind": "kafka", "bootstrap.servers": "h:99999999999999999999"}',
    b'{"epoch": 1' + b"0" * 5000 + b"}",
    b'{"v": 1, "generation": 1e999, "sessions": {}}',
    b'{"v": 1, "generation": "x", "sessions": {}}',
    b'{"v": 1, "sessions": {"00": {"acked": "AQ==", "last_ack_ms": [1]}}}',
    b'{"v": 1, "sessions": {"00": []}}',
    b'{"client": "c", "epoch": "seven"}',
    b'{"client": "c", "epoch": [1]}',
    b"[1, 2]",
    b'"text"',
    b" " * (2 << 20),
]


def _use(doc: Any) -> None:
    """What callers do with a parsed document: serialise it, print it, look up its brokers."""
    if isinstance(doc, ClusterSpec):
        assert ClusterSpec.from_json(doc.name, doc.to_json()) == doc
        doc.endpoints()
    elif isinstance(doc, (Route, Link)):
        json.dumps(doc.to_json())
        str(doc).encode("utf-8")
    elif isinstance(doc, LedgerDocument):
        LedgerDocument.from_json(doc.to_json())
    elif isinstance(doc, dict):
        json.dumps(doc, ensure_ascii=False).encode("utf-8")


def _check(parse: Parser, raw: bytes) -> None:
    try:
        doc = parse(raw)
    except ValidationError:
        return
    _use(doc)


@pytest.mark.parametrize("parser", sorted(PARSERS))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW)
def test_any_value_parses_or_raises_validation_error(parser: str, raw: bytes) -> None:
    _check(PARSERS[parser], raw)


@pytest.mark.parametrize("parser", sorted(PARSERS))
@pytest.mark.parametrize("raw", NASTY, ids=range(len(NASTY)))
def test_known_poison_values_raise_validation_error(parser: str, raw: bytes) -> None:
    _check(PARSERS[parser], raw)


def test_a_deeply_nested_route_is_rejected_naming_the_key() -> None:
    with pytest.raises(ValidationError) as err:
        Route.from_json("orders", DEEP, key="/ns/routes/orders")
    assert err.value.key == "/ns/routes/orders"
    assert "nested" in err.value.problem


def test_list_clients_leaves_out_invalid_presence_documents() -> None:
    center = ConfigCenter(MemoryStore(), "/ns")
    good = {"client": "c1", "role": "consumer", "cluster": "kafka-a", "epoch": 3, "state": "active"}
    center.store.put(center.keys.client("orders", "c1"), json.dumps(good).encode())
    for i, raw in enumerate([b"[1]", b'{"client": "c", "epoch": "x"}', DEEP, b"\xff"]):
        center.store.put(center.keys.client("orders", f"bad{i}"), raw)
    assert list_clients(center, "orders") == [good]
