"""A one-line progress bar on stderr (redrawn on a terminal, a line every few seconds otherwise)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    def __init__(self, out: TextIO | None = None, *, width: int = 30, every_s: float = 5.0) -> None:
        self.out = out or sys.stderr
        self.width = width
        self.every_s = every_s
        self._tty = self.out.isatty()
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, total: int, text: str = "") -> None:
        now = time.monotonic()
        if not self._tty and now - self._last < self.every_s:
            return
        self._last = now
        fraction = min(done / total, 1.0) if total else 1.0
        filled = int(fraction * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%} {text}"
        if self._tty:
            self.out.write("\r\x1b[2K" + line)
            self._drawn = True
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def close(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False
