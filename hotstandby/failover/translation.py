"""Choosing where a consumer starts on the cluster it moves to.

Each strategy proposes a start position for one partition on the new cluster, or declines.
*Exact* strategies (a committed offset there, MM2 checkpoints and offset syncs, forwards or
backwards) each give a position that is never after the first record the group has not
processed; the furthest of them wins, because it re-reads least and is still safe. Only when
none answers does a *fallback* run (a timestamp seek with a skew margin, then the start of the
partition). The exact filter removes whatever is read twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Proposal", "Strategy", "choose"]


@dataclass(frozen=True)
class Proposal:
    """A start position and how it was found."""

    position: int
    strategy: str
    detail: str = ""


@dataclass(frozen=True)
class Strategy:
    """``propose`` returns a :class:`Proposal` or None; ``exact`` says whether it is always safe."""

    name: str
    propose: Callable[[], Proposal | None]
    exact: bool = True


def choose(strategies: Sequence[Strategy]) -> Proposal:
    """The furthest exact proposal, else the first fallback that answers."""
    exact = [p for s in strategies if s.exact for p in [s.propose()] if p is not None]
    if exact:
        return max(exact, key=lambda p: p.position)
    for strategy in strategies:
        if not strategy.exact:
            proposal = strategy.propose()
            if proposal is not None:
                return proposal
    raise LookupError("no translation strategy answered, not even a fallback")
