"""What the soak samples: the resources of a process (or of every process of a session: the
Spark job's driver, JVM and Python workers), and the config center's keyspace."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotstandby.configcenter import ConfigCenter

_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Usage:
    rss_mb: float
    threads: int
    fds: int

    @staticmethod
    def none() -> Usage:
        return Usage(0.0, 0, 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.rss_mb + other.rss_mb, self.threads + other.threads, self.fds + other.fds)


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 0


def process_usage(pid: int) -> Usage:
    """RSS, threads and open file descriptors of ``pid`` (zero if it is gone)."""
    try:
        fields = _stat_fields(pid)
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return Usage.none()
    return Usage(rss_pages * _PAGE / 2**20, int(fields[17]), fds)


def session_usage(sid: int) -> Usage:
    """The sum over every process of session ``sid``."""
    total = Usage.none()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if int(_stat_fields(int(entry.name))[3]) != sid:
                continue
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        total = total + process_usage(int(entry.name))
    return total


def keyspace(center: ConfigCenter, namespace: str) -> dict[str, Any]:
    """Keys and bytes under ``namespace`` and under its ledgers, and etcd's database size."""
    kvs, _ = center.store.get_prefix(namespace.rstrip("/") + "/")
    ledgers = [kv for kv in kvs if "/ledgers/" in kv.key]
    status = center.store.call(lambda c: c.status())
    return {
        "etcd_keys": len(kvs),
        "etcd_kb": round(sum(len(kv.value) for kv in kvs) / 1024, 1),
        "ledger_keys": len(ledgers),
        "ledger_kb": round(sum(len(kv.value) for kv in ledgers) / 1024, 1),
        "etcd_db_mb": round(status.db_size / 2**20, 2),
    }
