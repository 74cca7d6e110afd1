"""The streaming offset: positions that name the route, the epoch and the cluster they are on.

Spark keeps a source's offsets in the query's checkpoint as JSON and compares them as
strings, so :meth:`SourceOffset.to_dict` always writes the same keys in the same order::

    {"route": "orders", "epoch": 2, "cluster": "kafka-b",
     "positions": {"kafka-a.orders": {"0": 40}, "orders": {"0": 12}},
     "logical": {"kafka-a.orders": "orders"},
     "starts": {"orders": {"0": 0}},
     "switch": {"from": "kafka-a", "epoch": 1, "strategies": {"mm2-checkpoint": 1, "beginning": 1}}}

``positions`` are the next offsets to read per physical topic-partition (Spark's Kafka form);
``logical`` names the logical topic of each remote copy (MM2's ``kafka-a.orders``). ``starts``
is where the batch ending at this offset begins for the partitions the previous offset does
not cover — new partitions, or every partition of the cluster a switch moved to (then
``switch`` says which strategies chose those starts). So a batch's ranges follow from its two
offsets alone, and a replayed batch reads exactly what the first attempt read. On Kafka,
``topic_ids`` keeps each physical topic's id, so that offsets taken on a topic since created
again (a cluster rebuilt empty) are never used on the new one; the batch after such a topic is
found carries a ``detour``: ranges on another cluster of the route, where the copies of what the
old topic held past the query's positions are (see :class:`Detour`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hotstandby.errors import ValidationError

__all__ = ["Detour", "Positions", "SourceOffset", "read_positions"]

#: physical topic -> partition -> offset
Positions = Mapping[str, Mapping[int, int]]

_WHAT = "streaming offset"


def _positions_json(positions: Positions) -> dict[str, dict[str, int]]:
    return {t: {str(p): positions[t][p] for p in sorted(positions[t])} for t in sorted(positions) if positions[t]}


def read_positions(what: str, value: Any) -> dict[str, dict[int, int]]:
    """Spark's Kafka positions ``{"topic": {"0": 23}}`` with integer partitions and offsets;
    :class:`ValidationError` naming ``what`` otherwise."""
    if not isinstance(value, dict):
        raise ValidationError(what, 'expected a JSON object {"topic": {"partition": offset}}')
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise ValidationError(what, f"topic {topic!r}: expected an object of partition -> offset")
        try:
            out[str(topic)] = {int(p): _offset(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            raise ValidationError(what, f"topic {topic!r}: partitions and offsets must be integers") from None
    return out


def _offset(value: Any) -> int:
    if type(value) is not int:  # not a float cut short, not a bool
        raise TypeError(value)
    return value


def _read_ids(doc: Mapping[str, Any], key: str) -> dict[str, str]:
    value = doc.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValidationError(_WHAT, f"{key!r} must map topics to message ids")
    try:
        for v in value.values():
            bytes.fromhex(v)
    except ValueError:
        raise ValidationError(_WHAT, f"{key!r}: a message id that is not hex") from None
    return {str(k): v for k, v in value.items()}


def _read_topic_ids(doc: Mapping[str, Any]) -> dict[str, str]:
    value = doc.get("topic_ids", {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValidationError(_WHAT, "'topic_ids' must map topics to topic ids")
    return {str(k): v for k, v in value.items()}


@dataclass(frozen=True)
class Detour:
    """A batch's ranges on another cluster than its own: ``(physical topic, logical topic,
    partition, start, end)`` on ``cluster``."""

    cluster: str
    ranges: tuple[tuple[str, str, int, int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "ranges": [list(r) for r in self.ranges]}

    @classmethod
    def from_dict(cls, doc: Any) -> Detour:
        try:
            ranges = tuple((str(t), str(lg), int(p), int(a), int(b)) for t, lg, p, a, b in doc["ranges"])
            return cls(str(doc["cluster"]), ranges)
        except (KeyError, TypeError, ValueError):
            raise ValidationError(
                _WHAT, "'detour' must be {cluster, ranges: [[topic, logical, partition, start, end]]}"
            ) from None


@dataclass(frozen=True)
class SourceOffset:
    """One end of a micro-batch (see the module docs)."""

    route: str
    epoch: int
    cluster: str
    positions: Positions
    logical: Mapping[str, str] = field(default_factory=dict)
    starts: Positions = field(default_factory=dict)
    switch: Mapping[str, Any] | None = None
    #: Pulsar: the last message id included, per topic partition (hex of its serialized form;
    #: "" before the first message); ``starts_ids``: where a batch begins after a switch.
    ids: Mapping[str, str] = field(default_factory=dict)
    starts_ids: Mapping[str, str] = field(default_factory=dict)
    #: Kafka: each physical topic's id when its positions were taken (a topic created again,
    #: or a cluster rebuilt, has a new id; its offsets then name other records).
    topic_ids: Mapping[str, str] = field(default_factory=dict)
    detour: Detour | None = None

    def logical_of(self, physical: str) -> str:
        return self.logical.get(physical, physical)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "route": self.route,
            "epoch": self.epoch,
            "cluster": self.cluster,
            "positions": _positions_json(self.positions),
        }
        copies = {t: self.logical[t] for t in sorted(self.logical) if t in self.positions and self.logical[t] != t}
        if copies:
            out["logical"] = copies
        starts = _positions_json(self.starts)
        if starts:
            out["starts"] = starts
        if self.ids:
            out["ids"] = {t: self.ids[t] for t in sorted(self.ids)}
        if self.starts_ids:
            out["starts_ids"] = {t: self.starts_ids[t] for t in sorted(self.starts_ids)}
        if self.topic_ids:
            out["topic_ids"] = {t: self.topic_ids[t] for t in sorted(self.topic_ids)}
        if self.switch:
            out["switch"] = dict(self.switch)
        if self.detour is not None:
            out["detour"] = self.detour.to_dict()
        return out

    @classmethod
    def from_dict(cls, doc: Any) -> SourceOffset:
        if not isinstance(doc, Mapping):
            raise ValidationError(_WHAT, f"expected an object, got {type(doc).__name__}")
        route, epoch, cluster = doc.get("route"), doc.get("epoch"), doc.get("cluster")
        if not isinstance(route, str) or not isinstance(cluster, str) or type(epoch) is not int:
            raise ValidationError(_WHAT, "needs 'route' and 'cluster' (text) and 'epoch' (an integer)")
        logical = doc.get("logical", {})
        if not isinstance(logical, dict) or not all(isinstance(v, str) for v in logical.values()):
            raise ValidationError(_WHAT, "'logical' must map topics to topics")
        switch = doc.get("switch")
        if switch is not None and not isinstance(switch, dict):
            raise ValidationError(_WHAT, "'switch' must be an object")
        return cls(
            route=route,
            epoch=epoch,
            cluster=cluster,
            positions=read_positions(f"{_WHAT} positions", doc.get("positions", {})),
            logical={str(k): v for k, v in logical.items()},
            starts=read_positions(f"{_WHAT} starts", doc.get("starts", {})),
            switch=switch,
            ids=_read_ids(doc, "ids"),
            starts_ids=_read_ids(doc, "starts_ids"),
            topic_ids=_read_topic_ids(doc),
            detour=Detour.from_dict(doc["detour"]) if "detour" in doc else None,
        )
