"""Human tables by default, one JSON document with ``--json``."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["emit", "invalid_section", "printable", "table"]

# Control characters (newlines, terminal escapes) in a value written to etcd must not garble
# or drive the operator's terminal: they are shown escaped.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(value: Any) -> str:
    """``value`` as one line of text, control characters escaped."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(value))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns separated by two spaces; None shows as '-'."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


def invalid_section(invalid: Sequence[dict[str, str]]) -> str:
    """The ``invalid:`` block listing entries the config center holds but that are not valid."""
    if not invalid:
        return ""
    return "\n\ninvalid:\n" + "\n".join(f"  {printable(i['key'])}: {printable(i['reason'])}" for i in invalid)


def emit(as_json: bool, data: Any, human: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if as_json:
        json.dump(data, out, indent=2, sort_keys=True)
        out.write("\n")
    else:
        out.write(human.rstrip("\n") + "\n")
