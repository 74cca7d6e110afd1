"""hotstandby: Kafka and Pulsar clients that fail over between replicated clusters in-process.

The config center (etcd) holds cluster definitions and routes; flipping a route's active
cluster moves every hotstandby client of that route; ``hotstandby.on_switch`` reports each
switch as a :class:`SwitchEvent`, :mod:`hotstandby.metrics` counts them. Importing this
package is cheap: it never imports confluent_kafka, pulsar, pyspark or the etcd client.
"""

# First: grpc reads this setting when it loads (see the module).
import hotstandby.grpc_fork  # noqa: F401  # isort: skip
from hotstandby.configcenter import ConfigCenter, MemoryStore, RouteChange, RouteWatcher
from hotstandby.configcenter.documents import ClusterSpec, Link, Route
from hotstandby.errors import (
    ClusterNotAnswering,
    ConcurrentUpdateError,
    ConfigCenterError,
    ConfigCenterUnavailable,
    ConfigError,
    ForeignPositionError,
    FormatError,
    HotStandbyError,
    MissingDependencyError,
    RefClusterError,
    StaleEpochError,
    SwitchError,
    UnexpectedEpochError,
    UnknownClusterError,
    UnknownRouteError,
    ValidationError,
)
from hotstandby.failover.switch_events import SwitchEvent, SwitchPhase
from hotstandby.settings import Settings

__version__ = "0.1.0"

__all__ = [
    "ClusterNotAnswering",
    "ClusterSpec",
    "ConcurrentUpdateError",
    "ConfigCenter",
    "ConfigCenterError",
    "ConfigCenterUnavailable",
    "ConfigError",
    "ForeignPositionError",
    "FormatError",
    "HotStandbyError",
    "Link",
    "MemoryStore",
    "MissingDependencyError",
    "RefClusterError",
    "Route",
    "RouteChange",
    "RouteWatcher",
    "Settings",
    "StaleEpochError",
    "SwitchError",
    "SwitchEvent",
    "SwitchPhase",
    "UnexpectedEpochError",
    "UnknownClusterError",
    "UnknownRouteError",
    "ValidationError",
    "__version__",
]
