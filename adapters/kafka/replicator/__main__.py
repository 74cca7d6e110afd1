"""``python -m hotstandby.adapters.kafka.replicator --config FLOW.json``: run one flow until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from hotstandby.adapters.kafka.replicator.config import FlowConfig
from hotstandby.adapters.kafka.replicator.flow import KafkaFlow
from hotstandby.errors import HotStandbyError
from hotstandby.logs import configure


def main() -> int:
    parser = argparse.ArgumentParser(prog="hotstandby-kafka-replicator", description=__doc__)
    parser.add_argument("--config", required=True, help="flow configuration (JSON)")
    args = parser.parse_args()
    configure("info", json=True)
    try:
        config = FlowConfig.load(args.config)
    except HotStandbyError as exc:
        print(f"replicator: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    KafkaFlow(config).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
