"""What a replicator process reports about itself, in ``<status_path>`` (JSON, rewritten
atomically about once a second) for ``hotstandby refcluster status``."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FlowStatus", "read_status"]

_MAX_ERRORS = 10


@dataclass
class FlowStatus:
    flow: str
    system: str
    pid: int = field(default_factory=os.getpid)
    state: str = "starting"
    started_at: float = field(default_factory=time.time)
    updated_at: float = 0.0
    policy: str = ""
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    topics_refreshed_at: float = 0.0
    records_copied: int = 0
    records_skipped: int = 0
    lag_records: int = 0
    lag_seconds: float = 0.0
    offset_syncs_emitted: int = 0
    last_offset_sync: dict[str, Any] | None = None
    checkpoints_emitted: int = 0
    last_checkpoint: dict[str, Any] | None = None
    heartbeats_emitted: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    intervals_overridden: dict[str, Any] = field(default_factory=dict)

    def error(self, message: str) -> None:
        self.errors.append({"at": time.time(), "error": message})
        del self.errors[:-_MAX_ERRORS]

    def write(self, path: str) -> None:
        if not path:
            return
        self.updated_at = time.time()
        tmp = Path(f"{path}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True))
        tmp.replace(path)


def read_status(path: str | Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError):
        return None
