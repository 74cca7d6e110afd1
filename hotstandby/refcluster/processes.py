"""Starting, checking and stopping local server processes by PID.

A PID alone can be reused by the system after a process exits, so before signalling we
check that ``/proc/<pid>/cmdline`` is still the command line we started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hotstandby.configcenter.polling import wait_until
from hotstandby.errors import ProcessStartError
from hotstandby.logs import get_logger

__all__ = ["is_running", "spawn", "stop_pid", "stop_pids", "tail", "wait_ready"]

log = get_logger("hotstandby.refcluster")


def spawn(
    argv: Sequence[str], *, log_path: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session (it outlives the CLI), output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )


def _reap(pid: int) -> None:
    # Only our own children can be reaped; for others (started by an earlier CLI call) the
    # system's init does it.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def is_running(pid: int, argv: Sequence[str]) -> bool:
    """True if ``pid`` is alive, not a zombie, and runs exactly ``argv`` (a reused PID does not)."""
    _reap(pid)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else "?"
    if state in ("Z", "X"):
        return False
    return cmdline.rstrip(b"\0").split(b"\0") == [a.encode() for a in argv]


def _wait_gone(pid: int, argv: Sequence[str], timeout: float) -> bool:
    return wait_until(lambda: not is_running(pid, argv), timeout, first=0.05, most=0.05)


def stop_pid(pid: int, argv: Sequence[str], *, timeout: float = 10.0, sig: int = signal.SIGTERM) -> bool:
    """Stop our process ``pid`` (started as ``argv``): ``sig``, then SIGKILL after ``timeout`` s.
    False if it was not running."""
    if not is_running(pid, argv):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    if sig != signal.SIGKILL and not _wait_gone(pid, argv, timeout):
        log.warning("process.kill", pid=pid, program=os.path.basename(argv[0]), after_s=timeout)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if not _wait_gone(pid, argv, 5.0):
        raise ProcessStartError(f"process {pid} ({argv[0]}) did not exit after SIGKILL")
    # It was started in a session of its own: what it left in its process group (a child that
    # ignored SIGTERM, or outlived a supervisor that had to be killed) goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


def stop_pids(processes: Sequence[tuple[int, Sequence[str]]]) -> list[bool]:
    """:func:`stop_pid` of each ``(pid, argv)``, all at once (a thread each): their grace
    periods after SIGTERM run side by side, not one after another."""
    if not processes:
        return []
    with ThreadPoolExecutor(len(processes), thread_name_prefix="hotstandby-stop") as pool:
        return list(pool.map(lambda p: stop_pid(*p), processes))


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_ready(
    name: str,
    proc: subprocess.Popen[bytes],
    check: Callable[[], object],
    *,
    timeout: float,
    log_path: Path,
    retry_on: tuple[type[BaseException], ...],
) -> float:
    """Poll ``check`` until it succeeds; returns seconds waited. Fails fast if ``proc`` exits."""
    started = time.monotonic()
    last: list[BaseException] = []

    def answers() -> bool:
        if proc.poll() is not None:
            raise ProcessStartError(f"{name} exited with code {proc.returncode}; log {log_path}:\n{tail(log_path)}")
        try:
            check()
            return True
        except retry_on as exc:
            last[:] = [exc]
            return False

    if wait_until(answers, timeout, first=0.05, most=0.05):
        return time.monotonic() - started
    why = last[0] if last else None
    raise ProcessStartError(f"{name} did not answer within {timeout:.0f} s ({why}); log {log_path}:\n{tail(log_path)}")
