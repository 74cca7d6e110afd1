"""``<ns>/routes/<route>``: the route document, and the fencing rules for its epoch.

A route's epoch only grows. Clients refuse an epoch not greater than the one they have, and
the config center keeps the last route value it wrote under ``<ns>/epochs/<route>`` (the
*epoch floor*, written in the same etcd transaction as the route). The floor outlives a
deleted route, so a route created again continues from it, and a value stored with a lower
epoch than the floor — or the floor's epoch with other contents — is invalid for everyone:
the CLI reports it, and a client starting then does not follow it (:func:`check_floor`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from hotstandby.configcenter.doc_parsing import load_object, read_text, validate_name
from hotstandby.errors import StaleEpochError, ValidationError

__all__ = ["MAX_EPOCH", "Route", "check_floor", "check_route_update", "utc_now_iso"]

#: Epochs are stored as JSON numbers and compared everywhere; keep them in int64 like etcd's.
MAX_EPOCH = 2**63 - 1


def utc_now_iso() -> str:
    """Current time as ISO 8601 UTC, the format of a route's ``at`` field."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 time (``Z`` allowed; no zone: UTC, as :func:`utc_now_iso` writes); None when
    ``text`` is not one (audit fields written by hand may carry anything)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """``<ns>/routes/<name>``: which of a set of replicated clusters applications use now.

    ``epoch`` only grows; clients never apply an epoch lower than or equal to one they have.
    """

    name: str
    active: str
    clusters: tuple[str, ...]
    epoch: int
    reason: str = ""
    by: str = ""
    at: str = ""

    @classmethod
    def from_json(cls, name: str, raw: bytes | str, *, key: str | None = None) -> Route:
        """Parse and validate; any malformed value raises :class:`ValidationError`."""
        key = key or f"routes/{name}"
        validate_name(key, name, "route")
        doc = load_object(key, raw)
        clusters = doc.get("clusters")
        if not isinstance(clusters, list) or not clusters or not all(isinstance(c, str) for c in clusters):
            raise ValidationError(key, "'clusters' must be a non-empty list of cluster names")
        for c in clusters:
            validate_name(key, c, "cluster")
        if len(set(clusters)) != len(clusters):
            raise ValidationError(key, f"'clusters' lists a cluster twice: {clusters}")
        active = doc.get("active")
        if not isinstance(active, str) or active not in clusters:
            shown = active[:80] if isinstance(active, str) else active
            raise ValidationError(key, f"'active' must be one of {clusters}, got {shown!r}")
        epoch = doc.get("epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= MAX_EPOCH:
            raise ValidationError(key, f"'epoch' must be an integer from 0 to 2^63-1, got {str(epoch)[:40]!r}")
        texts = {f: read_text(key, doc, f) for f in ("reason", "by", "at")}
        return cls(name=name, active=active, clusters=tuple(clusters), epoch=epoch, **texts)

    def to_json(self) -> str:
        return json.dumps(
            {
                "active": self.active,
                "clusters": list(self.clusters),
                "epoch": self.epoch,
                "reason": self.reason,
                "by": self.by,
                "at": self.at,
            }
        )

    @property
    def at_ms(self) -> int | None:
        """``at`` as milliseconds since the epoch; None when it is empty or not ISO 8601."""
        when = parse_iso(self.at)
        return None if when is None else int(when.timestamp() * 1000)

    def flipped(self, to: str, *, reason: str = "", by: str = "", after: int = 0) -> Route:
        """The route after a switch to ``to``: the epoch after max(own, ``after``), new audit fields."""
        epoch = max(self.epoch, after) + 1
        return replace(self, active=to, epoch=epoch, reason=reason, by=by, at=utc_now_iso())


def check_route_update(current: Route | None, new: Route, *, key: str | None = None) -> None:
    """A route update must move the epoch forward (fencing against stale writers and events)."""
    if current is not None and new.epoch <= current.epoch:
        raise StaleEpochError(
            key or f"routes/{new.name}",
            f"epoch {new.epoch} is not greater than the current epoch {current.epoch}",
        )


def check_floor(route: Route, floor: Route | None, *, key: str | None = None) -> None:
    """``route`` as stored is valid against the epoch floor (the last value the config center
    wrote): a higher epoch, or the floor's epoch with the same active cluster and clusters
    (audit fields edited by hand do not matter)."""
    if floor is None or route.epoch > floor.epoch:
        return
    if route.epoch == floor.epoch and (route.active, route.clusters) == (floor.active, floor.clusters):
        return
    key = key or f"routes/{route.name}"
    if route.epoch == floor.epoch:
        raise StaleEpochError(
            key, f"epoch {route.epoch} is not greater than the last epoch {floor.epoch} of this route, "
            f"which had other contents (active {floor.active!r}, clusters {list(floor.clusters)})",
        )  # fmt: skip
    raise StaleEpochError(key, f"epoch {route.epoch} is not greater than the last epoch {floor.epoch} of this route")
