"""Safe reading of the JSON documents kept in the config center.

Anyone with write access to etcd can put anything under a key, and one value must never stop
a watcher, a client or the CLI. :func:`load_object` therefore turns every way a value can be
wrong — not UTF-8, not JSON, nested deeper than the parser's stack, larger than any document
we write, strings that cannot be encoded again (lone surrogates) — into a
:class:`~hotstandby.errors.ValidationError` naming the key. The typed readers below do the
same for single fields.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from hotstandby.errors import ValidationError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_NESTING",
    "load_object",
    "read_int",
    "read_text",
    "validate_name",
]

#: Routes, clusters, links and presence documents are a few hundred bytes; 64 KiB is plenty.
MAX_DOCUMENT_BYTES = 64 * 1024
#: No document we write nests deeper than this; deeper values are refused before parsing.
MAX_NESTING = 32
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_OPENERS = re.compile(rb"[\[{]")


def validate_name(key: str, name: object, what: str) -> str:
    """Names of clusters and routes become etcd key segments and topic prefixes."""
    if not isinstance(name, str) or not _NAME.match(name):
        shown = name[:80] if isinstance(name, str) else name
        raise ValidationError(key, f"invalid {what} name {shown!r} (letters, digits, '.', '_', '-')")
    return name


def _nesting(data: bytes) -> int:
    """An upper bound of the nesting depth (brackets inside strings count too): cheap, and
    enough to refuse a value before the recursive parser sees it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def load_object(key: str, raw: bytes | str, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> dict[str, Any]:
    """Parse ``raw`` as one JSON object, or raise :class:`ValidationError` saying why not."""
    if isinstance(raw, str):
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(key, "value is not valid UTF-8 text") from None
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        data = bytes(raw)
    else:
        raise ValidationError(key, f"expected bytes, got {type(raw).__name__}")
    if len(data) > max_bytes:
        raise ValidationError(key, f"value of {len(data)} bytes is larger than the limit of {max_bytes}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(key, f"value is not UTF-8: {exc.reason} at byte {exc.start}") from None
    if _OPENERS.search(data) and _nesting(data) > MAX_NESTING:
        raise ValidationError(key, f"value is nested deeper than {MAX_NESTING} levels")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
        # Strings with lone surrogates ("\ud800") decode but can never be written or printed.
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(key, "value holds a string that is not valid Unicode") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, NaN
        raise ValidationError(key, f"malformed JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise ValidationError(key, f"expected a JSON object, got {type(doc).__name__}")
    return doc


def read_text(key: str, doc: Mapping[str, Any], field: str, default: str = "") -> str:
    """``doc[field]`` as a string (``default`` when absent)."""
    value = doc.get(field, default)
    if not isinstance(value, str):
        raise ValidationError(key, f"'{field}' must be a string, got {type(value).__name__}")
    return value


def read_int(key: str, doc: Mapping[str, Any], field: str, default: int, *, minimum: int | None = None) -> int:
    """``doc[field]`` as an integer (not a bool; a float only if integral), at least ``minimum``."""
    value = doc.get(field, default)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(key, f"'{field}' must be an integer, got {str(value)[:40]!r}")
    if minimum is not None and value < minimum:
        raise ValidationError(key, f"'{field}' must be at least {minimum}, got {value}")
    return value
