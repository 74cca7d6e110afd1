"""SIGTERM ends a command through its cleanup (a drill stops what it started), exit status 143."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A command that gets SIGTERM while it works, in a process of its own (SIGTERM's default action
# would end the test run itself).
_SCRIPT = textwrap.dedent(
    """
    import argparse, os, signal, time
    import hotstandby.cli as cli

    def work(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.01)
            print("not interrupted", flush=True)
            return 0
        finally:
            print("cleaned up", flush=True)

    def parser():
        p = argparse.ArgumentParser()
        p.add_argument("-v", "--verbose", action="count", default=0)
        p.set_defaults(func=work)
        return p

    cli.build_parser = parser
    try:
        cli.main([])
    finally:
        print("handler restored:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
    """
)


def test_sigterm_runs_the_commands_cleanup_and_exits_143() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert done.stdout.splitlines() == ["cleaned up", "handler restored: True"]
