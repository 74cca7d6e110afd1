"""The ``hotstandby`` command.

Every command accepts ``--etcd HOST:PORT[,HOST:PORT]`` and ``--namespace`` (environment
``HOTSTANDBY_ETCD`` and ``HOTSTANDBY_NAMESPACE``; defaults ``127.0.0.1:2379`` and
``/hotstandby``) and ``--json``. Exit status: 0 done, 1 refused or failed (the reason on
stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from hotstandby import __version__
from hotstandby.errors import HotStandbyError
from hotstandby.logs import configure

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from hotstandby.cli import config_cmds, drill_cmd, refcluster_cmds, roles_cmd

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--etcd", metavar="HOST:PORT[,HOST:PORT]", help="config center endpoints (env HOTSTANDBY_ETCD)")
    common.add_argument("--namespace", help="key prefix in etcd (env HOTSTANDBY_NAMESPACE, default /hotstandby)")
    common.add_argument("--etcd-ca", metavar="PEM", help="CA of etcd's certificate: TLS (env HOTSTANDBY_ETCD_CA)")
    common.add_argument("--etcd-cert", metavar="PEM", help="client certificate for etcd (env HOTSTANDBY_ETCD_CERT)")
    common.add_argument("--etcd-key", metavar="PEM", help="its key (env HOTSTANDBY_ETCD_KEY)")
    common.add_argument("--etcd-user", help="etcd user (env HOTSTANDBY_ETCD_USER); the password comes from "
                        "HOTSTANDBY_ETCD_PASSWORD or the file HOTSTANDBY_ETCD_PASSWORD_FILE, never a flag")  # fmt: skip
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")

    parser = argparse.ArgumentParser(
        prog="hotstandby", description="Failover between replicated Kafka/Pulsar clusters."
    )
    parser.add_argument("--version", action="version", version=f"hotstandby {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_cmds.add_commands(sub, common)
    refcluster_cmds.add_commands(sub, common)
    drill_cmd.add_commands(sub, common)
    roles_cmd.add_command(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hotstandby`` console script."""
    args = build_parser().parse_args(argv)
    configure(("warning", "info", "debug")[min(args.verbose, 2)])
    # SIGTERM (``timeout``, a supervisor) exits through the commands' cleanup — a drill stops
    # the Spark job and the reference cluster it started — not where the process stands.
    own_signals = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if own_signals else None
    try:
        return int(args.func(args))
    except HotStandbyError as exc:
        print(f"hotstandby: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if own_signals:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _terminated(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
