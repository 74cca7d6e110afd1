"""The drill's report: one JSON object (``--json``) or a short human summary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hotstandby.drill.tally import Event

__all__ = ["DrillReport", "SwitchReport", "Timeline"]

_SUMMED = ("produced", "consumed", "lost", "duplicated", "redelivered", "filtered", "resent", "failed_deliveries",
           "replicated")  # fmt: skip


@dataclass(frozen=True)
class SwitchReport:
    source: str
    to: str
    latency_ms: float | None  # route flip -> first record consumed on the new cluster
    killed: bool = False  # the old cluster's broker was SIGKILLed just before the flip
    duplicated: int = 0  # of the drill's duplicates, those seen from this flip to the next
    at_s: float | None = None  # seconds into the drill

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.to, "latency_ms": self.latency_ms, "killed": self.killed,
                "duplicated": self.duplicated, "at_s": self.at_s}  # fmt: skip


@dataclass(frozen=True)
class Timeline:
    """What the report page draws: records consumed per second and cluster, and what the drill
    did to the clusters (kills, restarts), in seconds from the drill's start."""

    per_second: dict[tuple[int, str], int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class DrillReport:
    system: str
    produced: int
    consumed: int
    lost: int
    duplicated: int
    redelivered: int
    filtered: int
    resent: int
    failed_deliveries: int
    replicated: int  # window records not re-sent: replication had copied them
    consumers: int
    seconds: float
    switches: list[SwitchReport] = field(default_factory=list)
    lost_sample: list[int] = field(default_factory=list)
    duplicated_sample: list[int] = field(default_factory=list)
    namespace: str = ""
    topic: str = ""
    phase: str = ""  # what this part of a drill exercised (a drill of several parts sums them)
    phases: list[DrillReport] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline, repr=False)  # not in to_dict: the report page's

    @classmethod
    def combine(cls, parts: list[DrillReport]) -> DrillReport:
        """One report for a drill run in parts, one after the other (the parts are kept)."""
        first = parts[0]
        return cls(
            system=first.system,
            **{name: sum(getattr(p, name) for p in parts) for name in _SUMMED},
            consumers=max(p.consumers for p in parts),
            seconds=round(sum(p.seconds for p in parts), 1),
            switches=[s for p in parts for s in p.switches],
            lost_sample=[seq for p in parts for seq in p.lost_sample][:20],
            duplicated_sample=[seq for p in parts for seq in p.duplicated_sample][:20],
            namespace=first.namespace,
            topic=first.topic,
            phases=list(parts),
        )  # fmt: skip

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.produced > 0

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("phases", "phase", "timeline")}
        if self.phase:
            data["phase"] = self.phase
        data["switches"] = [s.to_dict() for s in self.switches]
        data["ok"] = self.ok
        if self.phases:
            data["phases"] = [p.to_dict() for p in self.phases]
        return data

    def human(self) -> str:
        if self.phases:
            return "\n".join(p.human() for p in self.phases)
        verdict = "PASS" if self.ok else "FAIL"
        what = f"{self.system} drill" + (f" ({self.phase})" if self.phase else "")
        lines = [
            f"{verdict}  {what}: {self.produced} produced, {self.consumed} consumed by "
            f"{self.consumers} consumer(s) in {self.seconds:.1f} s",
            f"  lost           {self.lost}" + (f"  (e.g. {self.lost_sample[:10]})" if self.lost else ""),
            f"  duplicated     {self.duplicated}"
            + (f"  (e.g. {self.duplicated_sample[:10]})" if self.duplicated else ""),
            f"  filtered       {self.filtered}  (already consumed, removed by the ack ledger)",
            f"  re-sent        {self.resent}  (by producers on a switch, same identity)",
            f"  not re-sent    {self.replicated}  (acknowledged, and copied by replication already)",
            f"  redelivered    {self.redelivered}  (handed out again before being acknowledged)",
        ]
        if self.failed_deliveries:
            lines.append(f"  failed         {self.failed_deliveries}  (delivery reports with an error)")
        for i, s in enumerate(self.switches, 1):
            latency = "no record consumed there" if s.latency_ms is None else f"{s.latency_ms:.0f} ms"
            kill = "  after SIGKILL of " + s.source if s.killed else ""
            lines.append(f"  switch {i}       {s.source} -> {s.to}: first record after {latency}{kill}")
        return "\n".join(lines)
