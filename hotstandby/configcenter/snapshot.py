"""What the config center holds at one revision (:class:`Snapshot`), and who changes it."""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass, field

from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.errors import HotStandbyError

__all__ = ["Snapshot", "default_actor"]


def default_actor() -> str:
    """Who is making a change, for a route's ``by`` field: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything valid in the namespace at one revision, and what was not valid.

    ``floors`` holds each route's epoch floor (the last value the config center wrote, kept
    after a delete); a stored route below its floor is a problem, not a route."""

    revision: int
    clusters: dict[str, ClusterSpec] = field(default_factory=dict)
    routes: dict[str, Route] = field(default_factory=dict)
    links: dict[tuple[str, str], Link] = field(default_factory=dict)
    problems: list[HotStandbyError] = field(default_factory=list)
    floors: dict[str, Route] = field(default_factory=dict)
