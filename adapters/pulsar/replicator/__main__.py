"""``python -m hotstandby.adapters.pulsar.replicator --config FLOW.json``: run one flow until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from hotstandby.adapters.pulsar.replicator.config import PulsarFlowConfig
from hotstandby.adapters.pulsar.replicator.flow import PulsarFlow
from hotstandby.errors import HotStandbyError
from hotstandby.logs import configure


def main() -> int:
    parser = argparse.ArgumentParser(prog="hotstandby-pulsar-replicator", description=__doc__)
    parser.add_argument("--config", required=True, help="flow configuration (JSON)")
    args = parser.parse_args()
    configure("info", json=True)
    try:
        config = PulsarFlowConfig.load(args.config)
    except HotStandbyError as exc:
        print(f"replicator: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    PulsarFlow(config).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
