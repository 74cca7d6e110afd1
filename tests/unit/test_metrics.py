"""The in-process metrics registry, its Prometheus export, and the metrics the config center
and the ledger store update. No processes."""

from __future__ import annotations

import re
import sys

import pytest

from hotstandby import metrics
from hotstandby.configcenter import ConfigCenter, MemoryStore
from hotstandby.configcenter.prefix_watch import PrefixWatch
from hotstandby.errors import ConfigCenterUnavailable, MissingDependencyError
from hotstandby.failover.ledger.ledger import PartitionLedger
from hotstandby.failover.ledger.store import LedgerStore
from hotstandby.metrics.registry import Registry
from tests.support import wait_for


def test_counters_grow_by_label_set_and_refuse_wrong_labels() -> None:
    reg = Registry()
    c = reg.counter("x_total", "help", ("route",))
    c.inc(route="a")
    c.inc(2, route="a")
    c.inc(route="b")
    family = reg.snapshot()["x_total"]
    assert (family.kind, family.value(route="a"), family.value(route="b"), family.value()) == ("counter", 3, 1, 4)
    with pytest.raises(ValueError, match="labels"):
        c.inc(cluster="a")
    with pytest.raises(ValueError, match="does not decrease"):
        c.inc(-1, route="a")
    with pytest.raises(ValueError, match="registered already"):
        reg.counter("x_total", "again")


def test_a_followed_count_is_read_at_snapshot_and_kept_when_its_client_closes() -> None:
    reg = Registry()
    c = reg.counter("filtered_total", "help", ("route",))
    own = {"n": 0}
    followed = c.follow(lambda: own["n"], route="a")
    own["n"] = 5
    assert reg.snapshot()["filtered_total"].value(route="a") == 5
    own["n"] = 7
    followed.close()
    own["n"] = 100  # after close the client's count is no longer read
    assert reg.snapshot()["filtered_total"].value(route="a") == 7
    broken = c.follow(lambda: 1 // 0, route="a")  # a client whose count cannot be read: 0, no error
    assert reg.snapshot()["filtered_total"].value(route="a") == 7
    broken.close()


def test_gauges_set_add_and_forget() -> None:
    reg = Registry()
    g = reg.gauge("g", "help", ("client", "cluster"))
    g.set(1, client="c1", cluster="a")
    g.add(2, client="c2", cluster="a")
    g.add(-1, client="c2", cluster="a")
    assert reg.snapshot()["g"].value(cluster="a") == 2
    g.remove_matching(client="c1")
    assert [s.labels for s in reg.snapshot()["g"].samples] == [{"client": "c2", "cluster": "a"}]
    g.remove(client="c2", cluster="a")
    assert reg.snapshot()["g"].samples == ()


def test_histograms_count_cumulatively_per_bucket() -> None:
    reg = Registry()
    h = reg.histogram("h_seconds", "help", ("op",), buckets=(0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        h.observe(value, op="save")
    [sample] = reg.snapshot()["h_seconds"].samples
    assert sample.buckets == ((0.1, 2), (1.0, 3), (float("inf"), 4))
    assert sample.count == 4 and sample.value == pytest.approx(3.65)


def test_prometheus_export_on_a_registry_the_application_passes() -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    registry = prometheus_client.CollectorRegistry()
    collector = metrics.register_prometheus(registry)
    try:
        text = prometheus_client.generate_latest(registry).decode()
    finally:
        registry.unregister(collector)
    for name in ("hotstandby_switches_total", "hotstandby_switch_duration_seconds", "hotstandby_client_cluster",
                 "hotstandby_ledger_store_seconds", "hotstandby_etcd_watches"):  # fmt: skip
        assert re.search(rf"^# TYPE {name.removesuffix('_total')}(_total)? ", text, re.MULTILINE), name


def test_prometheus_export_without_prometheus_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'hotstandby\[metrics\]'"):
        metrics.register_prometheus()


def test_importing_hotstandby_metrics_imports_no_exporter() -> None:
    import subprocess

    exporters = "{'prometheus_client', 'opentelemetry'}"
    code = f"import sys, hotstandby, hotstandby.metrics; print({exporters} & set(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "set()"


def test_ledger_stores_are_timed_and_failures_counted() -> None:
    store = MemoryStore()
    ledgers = LedgerStore(ConfigCenter(store, "/m"))
    before = metrics.snapshot()
    ledgers.claim("g", "t", 0, owner="c1")
    ledgers.save("g", "t", 0, PartitionLedger(), generation=1, owner="c1")
    store.disconnect()
    with pytest.raises(ConfigCenterUnavailable):
        ledgers.save("g", "t", 0, PartitionLedger(), generation=1, owner="c1")
    store.reconnect()
    after = metrics.snapshot()
    seconds, failures = "hotstandby_ledger_store_seconds", "hotstandby_ledger_store_failures_total"
    assert after[seconds].count(op="claim") - before[seconds].count(op="claim") == 1
    assert after[seconds].count(op="save") - before[seconds].count(op="save") == 2
    assert after[failures].value(op="save") - before[failures].value(op="save") == 1


def test_etcd_watches_are_counted_connected_or_reconnecting() -> None:
    store = MemoryStore()
    prefix = "/m-watch/routes/"
    watch = PrefixWatch(store, prefix, lambda kvs, initial: None, lambda event: None, max_backoff=0.05).start(1.0)

    def state(name: str) -> float:
        return metrics.snapshot()["hotstandby_etcd_watches"].value(prefix=prefix, state=name)

    try:
        wait_for(lambda: state("connected") == 1, 5, "the watch connected")
        store.disconnect()
        wait_for(lambda: state("reconnecting") == 1 and state("connected") == 0, 5, "the watch reconnecting")
        store.reconnect()
        wait_for(lambda: state("connected") == 1, 5, "the watch connected again")
        assert metrics.snapshot()["hotstandby_etcd_watch_reconnects_total"].value(prefix=prefix) == 1
    finally:
        watch.stop()
    assert state("connected") == state("reconnecting") == 0
