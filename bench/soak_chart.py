"""The soak's picture: every sampled series over time, flips and kills marked (PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - a bench extra
    raise SystemExit("the soak draws with matplotlib: pip install -e '.[bench]'") from exc

# (panel title, [(sample key, label)], y label)
PANELS: list[tuple[str, list[tuple[str, str]], str]] = [
    ("memory", [("rss_mb", "soak process (SDK clients)"), ("spark_rss_mb", "Spark job")], "RSS (MB)"),
    ("threads", [("threads", "soak process"), ("spark_threads", "Spark job")], "threads"),
    ("file descriptors", [("fds", "soak process"), ("spark_fds", "Spark job")], "open fds"),
    ("config center", [("etcd_keys", "keys in the namespace"), ("ledger_keys", "ledger keys")], "keys"),
    ("sizes", [("etcd_kb", "namespace (KB)"), ("ledger_kb", "ledgers (KB)"), ("etcd_db_mb", "etcd db (MB)")], ""),
    ("records consumed", [("kafka_consumed", "kafka"), ("pulsar_consumed", "pulsar"), ("spark_consumed", "spark")],
     "records"),
]  # fmt: skip


def draw(samples: list[dict[str, Any]], events: list[dict[str, Any]], path: Path, title: str) -> None:
    """``samples``: dicts with ``t`` (minutes) and the keys of :data:`PANELS`; ``events``: dicts
    with ``t`` and ``kind`` (``flip`` or ``kill``)."""
    fig, axes = plt.subplots(3, 2, figsize=(14, 11), sharex=True)
    minutes = [s["t"] for s in samples]
    for ax, (name, series, ylabel) in zip(axes.flat, PANELS, strict=True):
        for key, label in series:
            if any(key in s for s in samples):
                ax.plot(minutes, [s.get(key, float("nan")) for s in samples], label=label, linewidth=1.2)
        for event in events:
            ax.axvline(event["t"], color="red" if event["kind"] == "kill" else "0.8",
                       linewidth=1.0 if event["kind"] == "kill" else 0.6, zorder=0)  # fmt: skip
        ax.set_title(name)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    for ax in axes[-1]:
        ax.set_xlabel("minutes (grey: a flip; red: a primary SIGKILLed)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
