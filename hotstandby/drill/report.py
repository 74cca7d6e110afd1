"""The drill's report: one JSON object (``--json``) or a short human summary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["DrillReport", "SwitchReport"]


@dataclass(frozen=True)
class SwitchReport:
    source: str
    to: str
    latency_ms: float | None  # route flip -> first record consumed on the new cluster
    killed: bool = False  # the old cluster's broker was SIGKILLed just before the flip

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.to, "latency_ms": self.latency_ms, "killed": self.killed}


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
    namespace: str = ""
    topic: str = ""

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.produced > 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["switches"] = [s.to_dict() for s in self.switches]
        data["ok"] = self.ok
        return data

    def human(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        lines = [
            f"{verdict}  {self.system} drill: {self.produced} produced, {self.consumed} consumed by "
            f"{self.consumers} consumer(s) in {self.seconds:.1f} s",
            f"  lost           {self.lost}" + (f"  (e.g. {self.lost_sample[:10]})" if self.lost else ""),
            f"  duplicated     {self.duplicated}",
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
