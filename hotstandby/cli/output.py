"""Human tables by default, one JSON document with ``--json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["emit", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns separated by two spaces; None shows as '-'."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


def emit(as_json: bool, data: Any, human: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if as_json:
        json.dump(data, out, indent=2, sort_keys=True)
        out.write("\n")
    else:
        out.write(human.rstrip("\n") + "\n")
