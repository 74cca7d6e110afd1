"""Route flips through the CLI and etcd trouble, seen by a running watcher."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import time
from dataclasses import replace

import pytest

from hotstandby.cli import main as cli_main
from hotstandby.configcenter import ConfigCenter
from hotstandby.errors import ConfigCenterUnavailable
from hotstandby.refcluster import RefCluster
from hotstandby.refcluster.binaries import find_binaries
from tests.integration.conftest import etcd_args
from tests.integration.etcd_kill import kill_etcd
from tests.support import ChangeQueue, capture_logs, wait_for


def test_cli_switch_is_seen_by_a_running_watcher(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    changes = ChangeQueue()
    delays_ms = []
    with center.watch_routes(changes):
        # Once through the installed console script, as an SRE would run it.
        script = shutil.which("hotstandby")
        assert script, "the hotstandby console script is not installed"
        out = subprocess.run([script, "switch", "orders", "--to", "kafka-b", "--reason", "test", *etcd_args(refcluster, namespace)],
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "epoch 1 -> 2" in out.stdout
        change = changes.take()
        assert (change.route.active, change.route.epoch, change.route.reason) == ("kafka-b", 2, "test")

        for i in range(10):
            target = ("kafka-a", "kafka-b")[i % 2]
            started = time.monotonic()
            assert cli_main(["switch", "orders", "--to", target, "--json", *etcd_args(refcluster, namespace)]) == 0
            seen_at, change = changes.take_timed()
            delays_ms.append((seen_at - started) * 1000)
            assert (change.route.active, change.route.epoch) == (target, 3 + i)
        changes.assert_empty()
    median = statistics.median(delays_ms)
    with capsys.disabled():
        print(
            f"\n[measure] CLI switch -> watcher delivery over 10 flips: median {median:.1f} ms, max {max(delays_ms):.1f} ms"
        )
    assert median < 1000, delays_ms


def test_watcher_survives_etcd_sigkill_and_delivers_the_flip_made_after_restart(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    changes = ChangeQueue()
    settings = replace(refcluster.settings(), namespace=namespace)
    with capture_logs() as logs, center.watch_routes(changes) as watcher:
        center.switch("orders", "kafka-b")
        assert changes.take().route.epoch == 2

        kill_etcd(refcluster)
        wait_for(lambda: any(e["event"] == "watch.disconnected" for e in logs), 15, "the watcher to see etcd die")
        refcluster.restart("etcd")

        # Flip as soon as etcd answers again, racing the watcher's reconnect.
        def flip() -> bool:
            try:
                with ConfigCenter.open(settings) as c:
                    c.switch("orders", "kafka-a", reason="after restart")
                return True
            except ConfigCenterUnavailable:
                return False

        wait_for(flip, 15, "etcd to accept the flip")
        change = changes.take(timeout=15)
        assert (change.route.active, change.route.epoch, change.route.reason) == ("kafka-a", 3, "after restart")
        changes.assert_empty(within=1.0)  # nothing delivered twice
        assert watcher.reconnects >= 1
        assert watcher.current("orders") == change.route


def test_malformed_values_written_with_etcdctl_are_rejected(
    refcluster: RefCluster, center: ConfigCenter, namespace: str
) -> None:
    etcdctl = str(find_binaries().etcd).replace("etcdbin/etcd", "etcdbin/etcdctl")
    key = center.keys.route("orders")

    def put(value: str) -> None:
        subprocess.run([etcdctl, "--endpoints", f"127.0.0.1:{refcluster.ports.etcd}", "put", key, value],
                       check=True, capture_output=True, timeout=30)  # fmt: skip

    changes = ChangeQueue()
    with capture_logs() as logs, center.watch_routes(changes) as watcher:
        put("{not json")
        put(json.dumps({"active": "kafka-z", "clusters": ["kafka-a", "kafka-z"], "epoch": 50}))
        put(json.dumps({"active": "kafka-b", "clusters": ["kafka-a", "kafka-b"], "epoch": 0}))
        put(json.dumps({"active": "kafka-b", "clusters": ["kafka-a", "kafka-b"], "epoch": 2}))
        change = changes.take()
        assert (change.route.active, change.route.epoch, change.previous.epoch) == ("kafka-b", 2, 1)  # type: ignore[union-attr]
        changes.assert_empty()
        assert watcher.rejected == 3
    reasons = [e["reason"] for e in logs if e["event"] == "route.rejected"]
    assert len(reasons) == 3
    assert "malformed JSON" in reasons[0] and "unknown cluster 'kafka-z'" in reasons[1] and "not greater" in reasons[2]


@pytest.mark.parametrize("where", ["routes", "clusters"])
def test_a_poisoned_value_is_rejected_once_and_a_later_flip_arrives_within_2_s(
    refcluster: RefCluster, center: ConfigCenter, namespace: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    etcdctl = str(find_binaries().etcd).replace("etcdbin/etcd", "etcdbin/etcdctl")
    # 10 KB of '[' (what stopped the watcher): under the route itself, or as an unused cluster.
    key = center.keys.route("orders") if where == "routes" else center.keys.cluster("kafka-unused")
    poison = "[" * 10_000
    changes = ChangeQueue()
    with capture_logs() as logs, center.watch_routes(changes) as watcher:
        subprocess.run([etcdctl, "--endpoints", f"127.0.0.1:{refcluster.ports.etcd}", "put", key, poison],
                       check=True, capture_output=True, timeout=30)  # fmt: skip
        # Not through cli_main: it configures logging for itself, which ends capture_logs.
        flipped_at = time.monotonic()
        center.switch("orders", "kafka-b")
        seen_at, change = changes.take_timed(timeout=10)
        assert (change.route.active, change.route.epoch) == ("kafka-b", 2)
        assert seen_at - flipped_at < 2.0, f"the flip arrived {seen_at - flipped_at:.2f} s after it was written"
        with capsys.disabled():
            print(
                f"\n[measure] flip after a poisoned {where} value delivered in {(seen_at - flipped_at) * 1000:.1f} ms"
            )
        center.switch("orders", "kafka-a")
        assert changes.take().route.epoch == 3
        changes.assert_empty()
    event = "route.rejected" if where == "routes" else "cluster.rejected"
    rejected = [e for e in logs if e["event"] == event]
    assert len(rejected) == 1 and "nested deeper" in rejected[0]["reason"], rejected
    assert watcher.current("orders").epoch == 3  # type: ignore[union-attr]
