"""Print every accepted change of the routes in a namespace until interrupted.

hotstandby refcluster up
python examples/watch_routes.py            # in one terminal
hotstandby switch orders --to kafka-b      # in another
"""

from __future__ import annotations

import argparse
import contextlib
import threading

from hotstandby import ConfigCenter, RouteChange, Settings
from hotstandby.logs import configure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--etcd", help="HOST:PORT[,HOST:PORT] (default: HOTSTANDBY_ETCD or 127.0.0.1:2379)")
    parser.add_argument("--namespace", help="default: HOTSTANDBY_NAMESPACE or /hotstandby")
    parser.add_argument("--seconds", type=float, default=3600.0, help="stop after this long")
    args = parser.parse_args()
    configure("info")

    def on_change(change: RouteChange) -> None:
        before = change.previous.active if change.previous else "-"
        print(
            f"{change.route.name}: {before} -> {change.route.active} (epoch {change.route.epoch}, {change.route.reason!r})"
        )

    settings = Settings.resolve(etcd=args.etcd, namespace=args.namespace)
    with ConfigCenter.open(settings) as center, center.watch_routes(on_change) as watcher:
        for name in sorted(center.routes()):
            route = watcher.current(name)
            if route:
                print(f"{name}: active {route.active} (epoch {route.epoch})")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait(args.seconds)


if __name__ == "__main__":
    main()
