"""Every error hotstandby raises, under one root.

::

    HotStandbyError
    ├── ConfigError (ValueError)            bad settings or bad values in the config center
    │   ├── ValidationError                 a cluster, route or link document is invalid
    │   │   └── StaleEpochError             a route epoch that does not move forward
    │   ├── UnknownClusterError (LookupError)
    │   └── UnknownRouteError (LookupError)
    ├── SwitchError                         a route flip was refused or lost a race
    │   ├── ConcurrentUpdateError           the route changed between read and write
    │   ├── UnexpectedEpochError            the route is not at the epoch the caller expected
    │   └── ClusterNotAnswering             the target cluster did not answer a probe
    ├── FencedError                         a newer owner (generation) holds what we tried to write
    ├── ConfigCenterError                   the config center (etcd) misbehaved
    │   ├── ConfigCenterUnavailable (ConnectionError)   retryable
    │   └── RevisionCompacted               a watch asked for history that is gone
    ├── FormatError (ValueError)             bytes that do not decode as their format says
    ├── ForeignPositionError (ValueError)    a position (message id) of a cluster the client left
    ├── MissingDependencyError (ImportError) an optional extra is not installed
    └── RefClusterError (RuntimeError)       the bundled reference cluster failed
        └── ProcessStartError               a process did not become ready in time

Foreign errors (grpc, pyetcd, confluent_kafka, pulsar) are mapped to these at the module
that talks to them, chained with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "ClusterNotAnswering",
    "ConcurrentUpdateError",
    "ConfigCenterError",
    "ConfigCenterUnavailable",
    "ConfigError",
    "FencedError",
    "ForeignPositionError",
    "FormatError",
    "HotStandbyError",
    "MissingDependencyError",
    "ProcessStartError",
    "RefClusterError",
    "RevisionCompacted",
    "StaleEpochError",
    "SwitchError",
    "UnexpectedEpochError",
    "UnknownClusterError",
    "UnknownRouteError",
    "ValidationError",
]


class HotStandbyError(Exception):
    """Root of every error raised by hotstandby."""


class ConfigError(HotStandbyError, ValueError):
    """Settings or config-center values are wrong; retrying will not help."""


class ValidationError(ConfigError):
    """A document read from or written to the config center is invalid.

    ``key`` names the config-center key (or the setting) and ``problem`` says what is wrong.
    """

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


class StaleEpochError(ValidationError):
    """A route update whose epoch is not greater than the one already known."""


class UnknownClusterError(ConfigError, LookupError):
    """A cluster name that has no definition in the config center."""


class UnknownRouteError(ConfigError, LookupError):
    """A route name that has no definition in the config center."""


class SwitchError(HotStandbyError):
    """A requested route flip was refused."""


class ConcurrentUpdateError(SwitchError):
    """The route was modified by someone else between our read and our write."""


class UnexpectedEpochError(SwitchError):
    """A flip conditioned on the route's epoch (``--expect-epoch``) found another epoch."""


class ClusterNotAnswering(SwitchError):
    """A flip was refused because no broker of the target cluster answered a probe."""


class FencedError(HotStandbyError):
    """A newer owner (higher generation) wrote this ledger: this client no longer owns it."""


class ConfigCenterError(HotStandbyError):
    """The config center failed to answer as expected."""


class ConfigCenterUnavailable(ConfigCenterError, ConnectionError):
    """The config center cannot be reached right now. Retryable."""


class RevisionCompacted(ConfigCenterError):
    """A watch asked for revisions that were compacted away; re-read the current state."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"revision compacted; oldest available is {compact_revision}")
        self.compact_revision = compact_revision


class FormatError(HotStandbyError, ValueError):
    """Bytes (a record key or value, a header) that do not decode as their format says."""


class ForeignPositionError(HotStandbyError, ValueError):
    """A position that names a message on a cluster the client has left (a Pulsar message id
    is meaningful on its own cluster only): seek by publish time instead, which any cluster
    answers."""


class MissingDependencyError(HotStandbyError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class RefClusterError(HotStandbyError, RuntimeError):
    """The bundled reference cluster could not do what was asked."""


class ProcessStartError(RefClusterError):
    """A reference-cluster process exited or did not answer before its deadline."""
