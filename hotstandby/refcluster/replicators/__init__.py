"""The reference cluster's replicators: one process per direction and system.

Each system's module (``refcluster/kafka.py``, ``refcluster/pulsar.py``) writes its flows'
configuration. The Kafka flows behave as MirrorMaker 2 (DefaultReplicationPolicy, offset syncs
on the source, checkpoints and heartbeats on the target) with shorter intervals than MM2's
defaults so tests and the drill see checkpoints within seconds; ``refcluster status`` lists
every interval that differs from MM2's default.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from hotstandby.refcluster.flow_status import read_status
from hotstandby.refcluster.system import FlowPlan

__all__ = ["REFCLUSTER_INTERVALS", "NotReady", "check_ready", "lite_flow", "replicator_name", "status_path"]

# Seconds. MM2's defaults: checkpoints 60, heartbeats 1, offset flush 60, topic and group refresh 600.
REFCLUSTER_INTERVALS: dict[str, float] = {
    "emit_checkpoints": 1.0,
    "emit_heartbeats": 1.0,
    "offset_flush": 1.0,
    "refresh_topics": 1.0,
    "refresh_groups": 1.0,
}


class NotReady(Exception):
    """A replicator has not reported ``running`` yet."""


def replicator_name(source: str, target: str) -> str:
    return f"mirror-{source}-to-{target}"


def lite_flow(directory: Path, name: str, module: str, config: Callable[[Path], str]) -> FlowPlan:
    """Write flow ``name``'s configuration, ``config(status path)``, into ``directory``; the
    process that runs it (``python -m module --config PATH``), ready once it reports
    ``running`` in its status file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(config(status_path(path)))
    # A status file left by a killed process must not pass for readiness.
    status_path(path).unlink(missing_ok=True)
    return FlowPlan(
        argv=[sys.executable, "-m", module, "--config", str(path)],
        ready=lambda _started: check_ready(path),
        retry_on=(NotReady,),
    )


def status_path(config_path: str | Path) -> Path:
    return Path(str(config_path)).with_suffix(".status.json")


def check_ready(config_path: str | Path) -> None:
    status = read_status(status_path(config_path))
    if not status or status.get("state") != "running":
        raise NotReady(f"{status_path(config_path)}: {status.get('state') if status else 'no status yet'}")
